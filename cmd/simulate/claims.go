package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/lockfault/lockfault/claims"
)

func cmdClaims(args []string, stdout, stderr io.Writer) int {
	f := newFlags("claims", "", stdout, stderr)
	var opt claims.Options
	backend := f.backend()
	f.IntVar(&opt.Cycles, "cycles", 0, "override every scenario's number of cycles (1 to 1000)")
	f.StringVar(&opt.Run.ReportsDir, "reports", "reports", "where report folders go")
	only := f.String("only", "", "comma-separated claim ids or scenario names (default: all)")
	md := f.String("out", "claims.md", "the matrix in markdown; the PNG goes beside it")
	f.IntVar(&opt.Parallel, "parallel", 1, fmt.Sprintf("scenarios run at the same time (1 to %d)", claims.MaxParallel))
	if code, ok := f.noArgs(args); !ok {
		return code
	}
	opt.Run.Backend = *backend
	if f.set("cycles") && opt.Cycles < 1 {
		return f.fail("-cycles %d: want 1 to 1000", opt.Cycles)
	}
	if err := opt.Check(); err != nil {
		return f.fail("%v", err)
	}
	entries, err := claims.Catalogue(list(*only))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if len(entries) == 0 {
		return f.fail("nothing matches -only %q", *only)
	}
	ctx, stop := interruptible()
	defer stop()
	defer writeIndex(opt.Run.ReportsDir, stderr)
	rows := claims.Run(ctx, entries, opt, func(s string) { fmt.Fprintln(stdout, s) })
	matched, err := claims.Write(*md, rows)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	fmt.Fprintf(stdout, "%d of %d rows matched their expected verdict; wrote %s and %s\n", matched, len(rows), *md, strings.TrimSuffix(*md, ".md")+".png")
	switch {
	case ctx.Err() != nil:
		return 2
	case matched < len(rows):
		return 1
	}
	return 0
}
