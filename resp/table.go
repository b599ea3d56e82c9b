package resp

// cmdInfo is what the tap knows about one command: where its keys are and
// whether it writes. Positions count the command name as argument 0.
type cmdInfo struct {
	first, last, step int  // keys: argv[first], argv[first+step], … up to argv[last] (last < 0: from the end, -1 the last)
	numkeys           int  // >0: argv[numkeys] says how many keys follow it (EVAL, FCALL)
	write             bool // may change data
}

// Key positions as Redis's legacy key specs give them.
var (
	oneKey   = cmdInfo{first: 1, last: 1, step: 1}
	allKeys  = cmdInfo{first: 1, last: -1, step: 1}
	pairKeys = cmdInfo{first: 1, last: -1, step: 2}
	scripted = cmdInfo{numkeys: 2}
	noKeys   = cmdInfo{}
)

func writes(c cmdInfo) cmdInfo { c.write = true; return c }

// commands covers what locks send, and what is near it. A command not here
// is described with its first argument as its key (Command.KeysGuessed).
var commands = map[string]cmdInfo{
	// strings
	"GET": oneKey, "SET": writes(oneKey), "SETNX": writes(oneKey), "SETEX": writes(oneKey),
	"PSETEX": writes(oneKey), "GETSET": writes(oneKey), "GETDEL": writes(oneKey),
	"GETEX": writes(oneKey), "APPEND": writes(oneKey), "STRLEN": oneKey,
	"INCR": writes(oneKey), "INCRBY": writes(oneKey), "INCRBYFLOAT": writes(oneKey),
	"DECR": writes(oneKey), "DECRBY": writes(oneKey),
	"MSET": writes(pairKeys), "MSETNX": writes(pairKeys), "MGET": allKeys,
	// keys
	"DEL": writes(allKeys), "UNLINK": writes(allKeys), "EXISTS": allKeys, "TYPE": oneKey,
	"EXPIRE": writes(oneKey), "PEXPIRE": writes(oneKey), "EXPIREAT": writes(oneKey),
	"PEXPIREAT": writes(oneKey), "PERSIST": writes(oneKey), "TTL": oneKey, "PTTL": oneKey,
	"EXPIRETIME": oneKey, "PEXPIRETIME": oneKey,
	"RENAME": writes(cmdInfo{first: 1, last: 2, step: 1}), "RENAMENX": writes(cmdInfo{first: 1, last: 2, step: 1}),
	// hashes
	"HSET": writes(oneKey), "HMSET": writes(oneKey), "HSETNX": writes(oneKey), "HGET": oneKey,
	"HMGET": oneKey, "HDEL": writes(oneKey), "HEXISTS": oneKey, "HINCRBY": writes(oneKey),
	"HINCRBYFLOAT": writes(oneKey), "HGETALL": oneKey, "HLEN": oneKey, "HKEYS": oneKey, "HVALS": oneKey,
	// lists and sorted sets some locks queue waiters in
	"LPUSH": writes(oneKey), "RPUSH": writes(oneKey), "LPOP": writes(oneKey), "RPOP": writes(oneKey),
	"LRANGE": oneKey, "LLEN": oneKey, "LREM": writes(oneKey),
	"ZADD": writes(oneKey), "ZREM": writes(oneKey), "ZSCORE": oneKey, "ZRANGE": oneKey, "ZCARD": oneKey,
	// transactions and pub/sub: PUBLISH's channel stands for its key
	"WATCH": allKeys, "UNWATCH": noKeys, "MULTI": noKeys, "EXEC": noKeys, "DISCARD": noKeys,
	"PUBLISH":   {first: 1, last: 1, step: 1},
	"SUBSCRIBE": noKeys, "PSUBSCRIBE": noKeys, "SSUBSCRIBE": noKeys,
	"UNSUBSCRIBE": noKeys, "PUNSUBSCRIBE": noKeys, "SUNSUBSCRIBE": noKeys,
	// scripts and functions: keys are counted by argv[2]
	"EVAL": writes(scripted), "EVALSHA": writes(scripted), "EVAL_RO": scripted, "EVALSHA_RO": scripted,
	"FCALL": writes(scripted), "FCALL_RO": scripted,
	// connection and server
	"HELLO": noKeys, "AUTH": noKeys, "CLIENT": noKeys, "SELECT": noKeys, "PING": noKeys,
	"ECHO": noKeys, "COMMAND": noKeys, "INFO": noKeys, "READONLY": noKeys, "READWRITE": noKeys,
	"QUIT": noKeys, "RESET": noKeys, "SCRIPT": noKeys, "FUNCTION": noKeys, "CONFIG": noKeys,
	"TIME": noKeys, "WAIT": noKeys, "ROLE": noKeys, "DBSIZE": noKeys, "MONITOR": noKeys,
	"FLUSHALL": writes(noKeys), "FLUSHDB": writes(noKeys), "REPLICAOF": noKeys, "SLAVEOF": noKeys,
	"SYNC": noKeys, "PSYNC": noKeys, "CLUSTER": noKeys, "SENTINEL": noKeys, "ACL": noKeys,
	"OBJECT": {first: 2, last: 2, step: 1}, "MEMORY": noKeys, "DEBUG": noKeys,
}

// containers are the commands whose first argument names a sub-command
// (SCRIPT LOAD, CLIENT SETNAME): Command.Sub.
var containers = map[string]bool{
	"SCRIPT": true, "CLIENT": true, "CONFIG": true, "FUNCTION": true, "OBJECT": true,
	"CLUSTER": true, "COMMAND": true, "ACL": true, "MEMORY": true, "DEBUG": true,
	"SENTINEL": true, "XINFO": true, "XGROUP": true, "PUBSUB": true, "MODULE": true,
	"LATENCY": true, "SLOWLOG": true,
}

// setUp are the connection set-up commands: a trigger without names never
// matches them.
var setUp = map[string]bool{
	"HELLO": true, "AUTH": true, "CLIENT": true, "SELECT": true, "PING": true,
	"COMMAND": true, "INFO": true, "READONLY": true, "QUIT": true, "RESET": true,
	"SCRIPT": true,
}

// subscribes are the commands whose replies are pub/sub messages: RESP3
// sends them as pushes (no reply to pair), RESP2 as ordinary arrays, one
// per channel.
var subscribes = map[string]bool{
	"SUBSCRIBE": true, "PSUBSCRIBE": true, "SSUBSCRIBE": true,
	"UNSUBSCRIBE": true, "PUNSUBSCRIBE": true, "SUNSUBSCRIBE": true,
}
