package resp

import (
	"cmp"
	"strings"
)

// Shape is a kind of command a client was seen to send: a random search
// draws triggers from these (Shape.Trigger).
type Shape struct {
	Client string
	// Name is the command's full name ("SET", "SCRIPT LOAD").
	Name string
	// Key is KeyPattern of the command's first key ("" for none).
	Key string
	// SHA is the script's SHA1, if any.
	SHA string
	// Op is the operation the client had in flight, if known.
	Op string
}

func shapeOf(client string, c *Command) Shape {
	s := Shape{Client: client, Name: c.FullName(), SHA: c.SHA, Op: c.Op}
	if len(c.Keys) > 0 {
		s.Key = KeyPattern(c.Keys[0])
	}
	return s
}

func compareShapes(a, b Shape) int {
	return cmp.Or(cmp.Compare(a.Client, b.Client), cmp.Compare(a.Name, b.Name),
		cmp.Compare(a.Key, b.Key), cmp.Compare(a.SHA, b.SHA), cmp.Compare(a.Op, b.Op))
}

// Trigger returns an AtRequest trigger matching this shape's commands.
func (s Shape) Trigger() Trigger {
	return Trigger{Client: s.Client, Names: []string{s.Name}, Key: s.Key, SHA: s.SHA, Op: s.Op}
}

// KeyPattern generalises a key into a glob that matches it and its
// siblings: every run of digits, and every run of 4 or more hex digits with
// a digit in it (tokens, UUID parts), becomes '*'; glob characters are
// escaped. "lock:order-17" gives "lock:order-*".
func KeyPattern(key string) string {
	var b strings.Builder
	star := false // the last thing written is a '*'
	wild := func() {
		if !star {
			b.WriteByte('*')
		}
		star = true
	}
	for i := 0; i < len(key); {
		j := i
		for j < len(key) && isHex(key[j]) {
			j++
		}
		if j-i >= 4 && strings.ContainsAny(key[i:j], "0123456789") {
			wild()
			i = j
			continue
		}
		if j == i {
			j = i + 1 // not a hex digit: one byte
		}
		for k := i; k < j; {
			if c := key[k]; '0' <= c && c <= '9' {
				for k < j && '0' <= key[k] && key[k] <= '9' {
					k++
				}
				wild()
				continue
			}
			if strings.IndexByte(`*?[]\`, key[k]) >= 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(key[k])
			star = false
			k++
		}
		i = j
	}
	return b.String()
}
