// Package tools holds checks that need tools lockfault's users never do:
// its own module (tools/go.mod), so their dependencies stay out of
// lockfault's and lockfault-ext's. `make test` runs its tests.
package tools
