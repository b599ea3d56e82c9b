package workercheck

// The rules of docs/PROTOCOL.md the checks hold a worker to, each quoted
// (shortened) with its section, as failures cite them.
const (
	ruleStartup     = `PROTOCOL.md Start-up: "The first command is always init; the worker answers with one line, ready or error, within 20 s." A worker that prints anything else first fails the start-up`
	ruleReady       = `PROTOCOL.md Start-up: ready declares lock, needs (single, masters or etcd), caps (known capabilities), failpoints, options, version (at most 200 bytes) and pid (its process id)`
	ruleRunInit     = `PROTOCOL.md Start-up: "Run (init with endpoints and resource): the worker builds its lock client against the endpoints first, then answers ready"`
	ruleFailpoints  = `PROTOCOL.md Commands: "every worker should hit cs-after-read and cs-before-write (in the critical section), before-acquire and before-release"; ready lists "every failpoint name it can hit"`
	ruleOneObject   = `PROTOCOL.md Rules: "One JSON object per line, UTF-8, ending in \n"`
	ruleTrailing    = `PROTOCOL.md Rules: "Nothing after the object on its line ({"cmd":"clock"}{"cmd":"shutdown"} is refused)"`
	ruleExactKeys   = `PROTOCOL.md Rules: "Exact keys. Key names are case-sensitive and each command takes only the keys in its row (plus cmd); an unknown key ... is refused. The same holds for the keys of endpoints"`
	ruleDupKeys     = `PROTOCOL.md Rules: "Exact keys": "a key given twice ... is refused"`
	ruleNull        = `PROTOCOL.md Rules: "Exact keys": "null as a value is refused"`
	ruleLineLength  = `PROTOCOL.md Rules: "Lines are at most 1 MiB (1048576 bytes, newline excluded). A longer line is refused with an error naming its line number, and reading goes on with the next line"`
	ruleInitFirst   = `PROTOCOL.md Rules: "init exactly once and first. Any command before it ... [is] refused; shutdown is always allowed"`
	ruleInitTwice   = `PROTOCOL.md Rules: "init exactly once and first": "a second init ... [is] refused"`
	ruleInitFailed  = `PROTOCOL.md Rules: "every command after a failed init (an endpoints included: it must not build the lock) [is] refused; shutdown is always allowed"`
	ruleOpIDs       = `PROTOCOL.md Rules: "Op ids are integers from 1 to 2^53-1 and unique within a worker's life. A refused operation with a new op id is ended by its error; a reused id is refused without ending anything"`
	ruleBounds      = `PROTOCOL.md Rules: "Bounds (integers only; a fraction, a string or an out-of-range value is refused): ttl_ms 1 to 3600000; wait_ms, hold_ms and failpoint ms 0 to 3600000; failpoint count 0 to 1000000; offset_ms -31622400000 to 31622400000"`
	ruleStrings     = `PROTOCOL.md Rules: "Strings are at most 4096 bytes and never empty when given"`
	ruleRequired    = `PROTOCOL.md Rules: "Required fields: acquire needs op, key, ttl_ms; cs, release, extend need op and lease; extend needs ttl_ms; failpoint needs name and action; endpoints needs endpoints"`
	ruleMessages    = `PROTOCOL.md Rules: "Messages: type is one of the table; a reply has the op of a command the harness sent and a status of ok, fail or info; code, when given, is malformed or not-supported" (one JSON object per line, exact keys)`
	ruleErrorLine   = `PROTOCOL.md Messages: error: "a command line was refused; line is its 1-based line number on stdin ... code says why: malformed (the line breaks a rule below) or not-supported"`
	ruleUnsupported = `PROTOCOL.md Rules: "Unsupported is said, never ignored. A command, failpoint, option, lock or extend the worker cannot do is answered with code: not-supported"`
	ruleOneReply    = `PROTOCOL.md Commands: "Operations (acquire, cs, release, extend) carry a positive op id, are executed one at a time, in order, and each gets exactly one reply with the same op"`
	ruleAcquire     = `PROTOCOL.md Commands: acquire "take the lock" (key, lease: the name the harness gives this grant, ttl_ms, wait_ms: how long to keep trying); status ok: it happened, fail: it certainly did not happen (the lock is taken)`
	ruleCS          = `PROTOCOL.md "The critical section and the resource": read the resource, wait hold_ms, write back the value + 1 under the grant's key; reply ok with read and wrote when both accesses were accepted`
	ruleRelease     = `PROTOCOL.md Commands: release "release the grant; the harness may later name a lease it already released: the worker must keep it known and let the lock refuse it"`
	ruleExtend      = `PROTOCOL.md Commands: extend "extend the grant (locks that can)"; "an extend of a lock that cannot extend: a reply with status: fail and that code [not-supported]"`
	ruleExtendOld   = `PROTOCOL.md Commands: extend "may extend an old, released lease: the lock must refuse it"`
	ruleValidUntil  = `PROTOCOL.md Messages: "valid_until is an absolute time on the host's CLOCK_MONOTONIC in nanoseconds ... the end of the validity the lock claims; 0 means the lock claims no end" (it cannot end after the acquire's start + ttl_ms)`
	ruleRound       = `PROTOCOL.md Commands: round "acquire (replied as op); if granted, send invoke for op_cs, run the critical section (reply op_cs), send invoke for op_release, release (reply op_release). Every reply carries t"`
	ruleRenew       = `PROTOCOL.md Messages: renew "the lock renewed a grant on its own (watchdog)": it names a lease the worker was granted`
	ruleFailpoint   = `PROTOCOL.md Commands: failpoint "arm a failpoint: at the named point the worker sends fired, then kills itself with SIGKILL (crash), sleeps ms (sleep), or sends stopping and SIGSTOPs itself (stop)"; "count (trigger on the N-th hit, default 1)"`
	ruleFpUnknown   = `PROTOCOL.md Commands: failpoint "A name the worker cannot hit is answered with an error with code: not-supported and the name and action"`
	ruleFired       = `PROTOCOL.md Messages: fired "an armed failpoint triggered; sent before its action"; stopping "a stop failpoint fired; the worker is about to SIGSTOP itself (after fired)"`
	ruleClock       = `PROTOCOL.md Commands: clock "answered at once with a clock message: offset_ms as asked, wall_ms"; offset_ms -31622400000 to 31622400000`
	ruleCut         = `PROTOCOL.md Commands: cut "end the hold of the critical section now running at once (it writes and replies as usual); nothing when no hold is under way"`
	ruleAtOnce      = `PROTOCOL.md Commands: "Control commands (failpoint, clock, cut, endpoints) take effect at once, even while an operation blocks"`
	ruleEndpoints   = `PROTOCOL.md Commands: endpoints "re-point the lock client (after a failover; after a describe-only init, build it) ... No answer unless it fails"`
	ruleShutdown    = `PROTOCOL.md Commands: shutdown "exit 0"; Rules: "shutdown is always allowed"`
)

// The ids of the checks that own a rule every conversation is judged by:
// a set-up step that breaks it is reported against them.
const (
	idDescribe    = "handshake/describe"
	idReady       = "handshake/ready-fields"
	idRun         = "handshake/run"
	idMessages    = "messages/valid"
	idOneReply    = "ops/one-reply"
	idAcquire     = "ops/acquire"
	idCS          = "ops/cs"
	idRelease     = "ops/release"
	idExtend      = "ops/extend"
	idRenew       = "ops/renew"
	idRound       = "ops/round"
	idClock       = "control/clock"
	idCut         = "control/cut"
	idEndpoints   = "control/endpoints"
	idFpDeclared  = "handshake/failpoints"
	idFpOff       = "control/failpoint-off"
	idFpStop      = "control/failpoint-stop"
	idFpUnknown   = "control/failpoint-unknown"
	idShutdown    = "shutdown/exit-0"
	idUnsupLock   = "unsupported/lock"
	idUnsupOption = "unsupported/option"
)
