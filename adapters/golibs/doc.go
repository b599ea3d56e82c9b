// Package golibs adapts published Go lock libraries to lockfault's lock
// interface: one file per library, each registering its lock from init.
//
// It lives in its own module (github.com/lockfault/lockfault/adapters) so that
// the libraries' versions never reach lockfault's root go.mod, where
// minimal version selection would upgrade a user's own pinned release of
// them. Its locks run as an external worker binary, cmd/lockfault-ext.
package golibs
