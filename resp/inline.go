package resp

import (
	"bytes"
	"errors"
)

// splitInline splits an inline command into its words as Redis does
// (sdssplitargs): words are separated by blanks; "double quotes" allow
// \n \r \t \b \a \xHH and \<any> escapes; 'single quotes' allow \'; a
// closing quote must be followed by a blank or the end of the line.
//
// Redis finds an inline command's end with strchr, so a NUL byte hides the
// rest of the line from it: such a line is refused here rather than guessed.
func splitInline(line []byte) ([][]byte, error) {
	if bytes.IndexByte(line, 0) >= 0 {
		return nil, errors.New("inline command with a NUL byte")
	}
	var words [][]byte
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			return words, nil
		}
		word, next, err := inlineWord(line, i)
		if err != nil {
			return nil, err
		}
		words = append(words, word)
		i = next
	}
}

// inlineWord reads the word starting at line[i] and returns it and the
// index after it.
func inlineWord(line []byte, i int) ([]byte, int, error) {
	var w []byte
	at := func(j int) byte { // the byte at j, or 0 past the end (C's NUL)
		if j < len(line) {
			return line[j]
		}
		return 0
	}
	closing := func(j int) (int, error) { // j is a closing quote
		if c := at(j + 1); c != 0 && !isSpace(c) {
			return 0, errors.New("inline command: closing quote must be followed by a space")
		}
		return j + 1, nil
	}
	inq, insq := false, false
	for {
		c := at(i)
		switch {
		case inq:
			switch {
			case c == 0:
				return nil, 0, errors.New("inline command: unbalanced quotes")
			case c == '\\' && at(i+1) == 'x' && isHex(at(i+2)) && isHex(at(i+3)):
				w = append(w, unhex(at(i+2))<<4|unhex(at(i+3)))
				i += 4
			case c == '\\' && at(i+1) != 0:
				w = append(w, unescape(at(i+1)))
				i += 2
			case c == '"':
				next, err := closing(i)
				return w, next, err
			default:
				w = append(w, c)
				i++
			}
		case insq:
			switch {
			case c == 0:
				return nil, 0, errors.New("inline command: unbalanced quotes")
			case c == '\\' && at(i+1) == '\'':
				w = append(w, '\'')
				i += 2
			case c == '\'':
				next, err := closing(i)
				return w, next, err
			default:
				w = append(w, c)
				i++
			}
		default:
			switch c {
			case ' ', '\n', '\r', '\t', 0:
				if w == nil {
					w = []byte{}
				}
				return w, i, nil
			case '"':
				inq = true
			case '\'':
				insq = true
			default:
				w = append(w, c)
			}
			i++
		}
	}
}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}
