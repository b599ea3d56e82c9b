package resp

import (
	"fmt"
	"strconv"
	"strings"
)

// Command describes one request as the tap saw it.
type Command struct {
	// Name is the command's name in upper case ("SET", "EVALSHA").
	Name string
	// Sub is the sub-command in upper case for commands that have them
	// (SCRIPT LOAD, CLIENT SETNAME), else empty.
	Sub string
	// Argv holds the arguments as sent, the name first; each is kept up to
	// MaxArgKept bytes (a script up to MaxScriptKept), and at most
	// MaxArgsKept of them.
	Argv []string
	// Argc is the number of arguments sent, the name included.
	Argc int
	// Keys are the keys the command names, by the table of known commands
	// (PUBLISH: its channel; EVAL, EVALSHA, FCALL and their _RO forms: the
	// numkeys keys; EXEC: the keys of the commands it runs).
	Keys []string
	// KeysGuessed is set for a command the table does not know: Keys then
	// holds its first argument, which is where most commands put their key.
	KeysGuessed bool
	// Script is the text of the script (EVAL, EVAL_RO, SCRIPT LOAD; EVALSHA
	// when the registry saw the text loaded or EVALed), kept up to
	// MaxScriptKept bytes.
	Script string
	// SHA is the lower-case hex SHA1 of the script: EVALSHA's argument, or
	// the hash of EVAL's or SCRIPT LOAD's whole text.
	SHA string
	// Write is set for a command that may change data (EVAL and FCALL may;
	// their _RO forms may not; EXEC does if a command it runs does).
	Write bool
	// Queued is set for a command sent inside MULTI: its reply is QUEUED,
	// and the EXEC that follows runs it.
	Queued bool
	// Tx lists, for EXEC, the commands it runs (at most MaxTxKept).
	Tx []*Command
	// Op is the operation the client had in flight when it sent the
	// command, as the registry's op source said (see Registry.SetOpSource).
	Op string
	// Inline is set for a command sent as a line of words.
	Inline bool
	// Size is the command's length on the wire in bytes.
	Size int64
	// Truncated is set when an argument or the argument list was cut.
	Truncated bool
}

// describe makes a Command of the kept arguments of a request of argc
// arguments.
func describe(argv []string, argc int, sha string, trunc, inline bool) *Command {
	c := &Command{
		Name:      strings.ToUpper(argv[0]),
		Argv:      append([]string(nil), argv...),
		Argc:      argc,
		Inline:    inline,
		Truncated: trunc,
	}
	if containers[c.Name] && len(argv) > 1 {
		c.Sub = strings.ToUpper(argv[1])
	}
	info, known := commands[c.Name]
	c.Write = info.write
	switch {
	case !known:
		if len(c.Argv) > 1 {
			c.Keys, c.KeysGuessed = c.Argv[1:2], true
		}
	case info.numkeys > 0:
		c.Keys = numKeys(c.Argv, argc, info.numkeys)
	case info.first > 0:
		c.Keys = keysAt(c.Argv, argc, info)
	}
	switch c.Name {
	case "EVAL", "EVAL_RO":
		if len(c.Argv) > 1 {
			c.Script, c.SHA = c.Argv[1], sha
		}
	case "EVALSHA", "EVALSHA_RO":
		if len(c.Argv) > 1 {
			c.SHA = strings.ToLower(c.Argv[1])
		}
	case "SCRIPT":
		if c.Sub == "LOAD" && len(c.Argv) > 2 {
			c.Script, c.SHA = c.Argv[2], sha
		}
	}
	return c
}

// keysAt picks the keys at the positions info gives.
func keysAt(argv []string, argc int, info cmdInfo) []string {
	last := info.last
	if last < 0 {
		last += argc
	}
	var keys []string
	for i := info.first; i <= last && i < len(argv); i += info.step {
		keys = append(keys, argv[i])
	}
	return keys
}

// numKeys picks the keys counted by argv[at] (EVAL script numkeys key…).
func numKeys(argv []string, argc, at int) []string {
	if at >= len(argv) {
		return nil
	}
	n, err := strconv.Atoi(argv[at])
	if err != nil || n <= 0 || at+n >= argc {
		return nil
	}
	return argv[at+1 : min(at+1+n, len(argv))]
}

// FullName is the name with its sub-command: "SCRIPT LOAD", "SET".
func (c *Command) FullName() string {
	if c.Sub == "" {
		return c.Name
	}
	return c.Name + " " + c.Sub
}

// Is reports whether name (any case) names this command: its Name, or its
// FullName ("SCRIPT" and "SCRIPT LOAD" both name SCRIPT LOAD).
func (c *Command) Is(name string) bool {
	return strings.EqualFold(name, c.Name) || (c.Sub != "" && strings.EqualFold(name, c.FullName()))
}

// SetUp reports whether the command is a connection set-up command (HELLO,
// AUTH, CLIENT, SELECT, PING, COMMAND, INFO, READONLY, QUIT, RESET,
// SCRIPT), which a trigger matches only when it names it.
func (c *Command) SetUp() bool { return setUp[c.Name] }

// String is a short description for notes and logs: the full name, the
// keys and the SHA.
func (c *Command) String() string {
	var b strings.Builder
	b.WriteString(c.FullName())
	if len(c.Keys) > 0 {
		fmt.Fprintf(&b, " keys=%q", c.Keys)
	}
	if c.SHA != "" {
		fmt.Fprintf(&b, " sha=%s", c.SHA)
	}
	return b.String()
}
