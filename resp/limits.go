package resp

import "time"

// Bounds on what a peer can make the tap read, keep or wait for. A stream
// that exceeds a parse bound is forwarded untouched from then on (see
// Note); the others only cut what is kept.
const (
	// MaxInlineLen bounds an inline command's line, as Redis's
	// PROTO_INLINE_MAX_SIZE does.
	MaxInlineLen = 64 << 10
	// MaxHeaderLen bounds a length or count line ("*3", "$11", "%?").
	MaxHeaderLen = 32
	// MaxArgs bounds the arguments of one request (Redis: 1024*1024).
	MaxArgs = 1 << 20
	// MaxBulkLen bounds one bulk string in a request or a reply: Redis's
	// default proto-max-bulk-len and its largest string.
	MaxBulkLen = 512 << 20
	// MaxAggregateLen bounds the elements of one reply aggregate (pairs of
	// a map or attribute).
	MaxAggregateLen = 1 << 26
	// MaxDepth bounds the nesting of reply aggregates, attributes included.
	MaxDepth = 64
	// MaxSimpleLen bounds a reply line without a length: a simple string,
	// an error, an integer, a double or a big number.
	MaxSimpleLen = 1 << 20
)

// Bounds on what a Command and a Reply keep of a message: longer parts are
// cut (Command.Truncated), the stream itself is not.
const (
	// MaxArgKept is how many bytes of an ordinary argument are kept.
	MaxArgKept = 1 << 10
	// MaxScriptKept is how many bytes of a script's text are kept (its
	// SHA is always of the whole text).
	MaxScriptKept = 1 << 20
	// MaxArgsKept is how many arguments of one command are kept.
	MaxArgsKept = 256
	// MaxTxKept is how many queued commands an EXEC's Command describes.
	MaxTxKept = 64
	// MaxReplyText is how many bytes of a reply's text are kept.
	MaxReplyText = 256
)

// Bounds of a tap and a registry.
const (
	// MaxInFlight bounds the requests of one connection awaiting their
	// replies; a client that pipelines more waits until replies come back.
	MaxInFlight = 4096
	// MaxConns bounds the connections one tap serves at a time; more are
	// refused (closed at once, with a Note).
	MaxConns = 1024
	// MaxScripts bounds the script texts a registry remembers by SHA.
	MaxScripts = 256
	// MaxShapes bounds the distinct command shapes a registry records.
	MaxShapes = 1024
	// MaxNotes bounds the notes a registry keeps (the first ones).
	MaxNotes = 256
	// MaxNth bounds Trigger.Nth.
	MaxNth = 1 << 20
	// ReadBufSize is the buffer of each direction of a connection: a
	// message that fits is held whole; a longer one streams through and
	// only its last bytes are held.
	ReadBufSize = 64 << 10
	// DefaultHoldLimit is how long a message is held when the trigger
	// names no limit.
	DefaultHoldLimit = 10 * time.Second
	// MaxHoldLimit bounds Trigger.HoldLimit.
	MaxHoldLimit = 5 * time.Minute
	// DialTimeout bounds connecting to the upstream.
	DialTimeout = 5 * time.Second
	// LingerLimit is how long one direction of a connection may stay open
	// after the other has ended.
	LingerLimit = 10 * time.Second
)
