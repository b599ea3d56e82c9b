// Package resp taps the Redis protocol between a client and a node so that
// a fault can fire on a command the client sends.
//
// A Tap is a TCP forwarder on loopback in front of one node for one client.
// It parses both directions as they stream through (RESP2 and RESP3:
// RequestParser and ReplyParser find message boundaries without buffering
// whole values), pairs every command with its reply, and asks a Registry
// whether an armed Trigger matches. A matching command is held on its
// connection before it is forwarded to the node (AtRequest), or its reply is
// held after the node answered and before the client gets it (AtReply), until
// the trigger's callback returns or its hold limit passes. Only that
// connection stalls, and only in that direction.
//
// Whatever the tap cannot follow (a parse error, a reply no request awaits,
// RESP2 pub/sub, MONITOR, CLIENT REPLY OFF|SKIP) it forwards byte for byte
// from then on and records why in the registry's notes: a tap never corrupts
// or stalls a stream it does not understand.
package resp
