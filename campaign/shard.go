package campaign

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// MaxShards bounds N in "i/N".
const MaxShards = 1000

// Shard is the I-th of N parts of a campaign, I counting from 1. The zero
// Shard means the whole campaign (as "1/1").
type Shard struct{ I, N int }

// All is the whole campaign as one shard.
var All = Shard{1, 1}

// ParseShard reads "i/N" (1 ≤ i ≤ N ≤ MaxShards). Errors name the flag:
// "-shard: ...".
func ParseShard(s string) (Shard, error) {
	bad := func(why string) (Shard, error) {
		return Shard{}, fmt.Errorf("-shard: %q %s (allowed: i/N with 1 ≤ i ≤ N ≤ %d, e.g. 2/4)", s, why, MaxShards)
	}
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return bad("is not i/N")
	}
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	switch {
	case err1 != nil || err2 != nil:
		return bad("is not two whole numbers")
	case n < 1 || n > MaxShards:
		return bad(fmt.Sprintf("has N = %d", n))
	case i < 1 || i > n:
		return bad(fmt.Sprintf("has i = %d", i))
	}
	return Shard{i, n}, nil
}

// String is "i/N".
func (s Shard) String() string {
	s = s.norm()
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

func (s Shard) norm() Shard {
	if s.N == 0 {
		return All
	}
	return s
}

// Valid reports whether 1 ≤ I ≤ N ≤ MaxShards (the zero Shard is valid).
func (s Shard) Valid() bool {
	s = s.norm()
	return s.N >= 1 && s.N <= MaxShards && s.I >= 1 && s.I <= s.N
}

// Of is the shard (1-based) a run identity belongs to among n: a hash of
// the identity alone, so every machine computes the same split and adding
// a run to a campaign never moves another.
func Of(identity string, n int) int {
	if n <= 1 {
		return 1
	}
	sum := sha256.Sum256([]byte(identity))
	return int(binary.BigEndian.Uint64(sum[:8])%uint64(n)) + 1
}

// Has reports whether the shard runs the identity.
func (s Shard) Has(identity string) bool {
	s = s.norm()
	return Of(identity, s.N) == s.I
}

// Select keeps the runs of one shard, in their order.
func (s Shard) Select(specs []RunSpec) []RunSpec {
	s = s.norm()
	var out []RunSpec
	for _, sp := range specs {
		if s.Has(sp.Identity) {
			sp.Shard = s
			out = append(out, sp)
		}
	}
	return out
}
