package lockimpl

import (
	"math/rand/v2"
	"time"
)

// RetryDelay is the pause between attempts of a blocking acquire: 1 to 3 ms,
// random so that contending clients do not stay in lock-step, and short so
// that a lock freed between two attempts is taken within a few
// milliseconds (a loopback SET NX costs about 0.1 ms, so a waiting client
// adds little load).
func RetryDelay() time.Duration {
	return time.Millisecond + rand.N(2*time.Millisecond)
}
