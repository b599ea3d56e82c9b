// Package examples holds lockfault's external workers for lock libraries in
// other languages (Python and PHP: one shared protocol module per language,
// one small adapter per library) and the tests that hold every one of them
// to docs/PROTOCOL.md. examples/golock is a module of its own.
package examples
