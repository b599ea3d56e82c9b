package lockimpl

import (
	"math/rand/v2"
	"time"
)

// RetryDelay is the pause between attempts of a blocking acquire: 5 to 15 ms,
// random so that contending clients do not stay in lock-step.
func RetryDelay() time.Duration {
	return 5*time.Millisecond + rand.N(10*time.Millisecond)
}
