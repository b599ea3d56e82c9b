package runner

import (
	"runtime/debug"
	"testing"
)

func TestVersionNamesTheCommitOrTheBinary(t *testing.T) {
	const commit = "126bb37a4c4e2f0b8e1d6c1c6f1b2a3d4e5f6a7b"
	hash := func() string { return "lockfault build 0123456789abcdef" }
	stamp := func(rev, modified string) *debug.BuildInfo {
		bi := &debug.BuildInfo{}
		if rev != "" {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "vcs.revision", Value: rev})
		}
		if modified != "" {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "vcs.modified", Value: modified})
		}
		return bi
	}
	for _, c := range []struct {
		name    string
		bi      *debug.BuildInfo
		stamped string
		want    string
	}{
		{"Go's stamp of a clean tree", stamp(commit, "false"), "", "lockfault " + commit},
		{"Go's stamp wins over the Makefile's", stamp(commit, "false"), "ffffffffffffffffffffffffffffffffffffffff", "lockfault " + commit},
		{"Go saw local changes", stamp(commit, "true"), commit, hash()},
		{"-buildvcs=false, the Makefile's stamp", stamp("", ""), commit, "lockfault " + commit},
		{"no build info, the Makefile's stamp", nil, commit, "lockfault " + commit},
		{"a dirty stamp is not a commit", stamp("", ""), commit + "-dirty", hash()},
		{"a short stamp is not a commit", stamp("", ""), commit[:12], hash()},
		{"no stamp at all", stamp("", ""), "", hash()},
	} {
		if got := versionOf(c.bi, c.stamped, hash); got != c.want {
			t.Errorf("%s: versionOf = %q, want %q", c.name, got, c.want)
		}
	}
}
