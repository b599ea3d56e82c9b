package scenarios

import (
	"fmt"
	"regexp"
	"strconv"
)

var lineRE = regexp.MustCompile(`line (\d+)`)

// shiftLines adds delta to every "line N" in an error message.
func shiftLines(err error, delta int) error {
	if delta == 0 {
		return err
	}
	return fmt.Errorf("%s", lineRE.ReplaceAllStringFunc(err.Error(), func(m string) string {
		n, _ := strconv.Atoi(m[5:])
		return "line " + strconv.Itoa(n+delta)
	}))
}

// prefixLines rewrites yaml's "line N: msg" into "file:N: msg" form.
func prefixLines(err error, file string) error {
	return fmt.Errorf("%s", lineRE.ReplaceAllString(err.Error(), "line $1"))
}
