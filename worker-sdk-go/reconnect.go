package orbit

import (
	"errors"
	"math/rand/v2"
	"time"
)

// ReconnectPolicy is the worker's reconnect backoff: exponential with jitter, bounded by a number of
// consecutive failed attempts after which Run returns an error (a wrong URL or a gateway that
// never comes back ends the process instead of retrying silently forever).
type ReconnectPolicy struct {
	// InitialDelay is the first delay (default 100 ms).
	InitialDelay time.Duration
	// MaxDelay is the largest delay (default 5 s): well under a lease, so a resume is in time.
	MaxDelay time.Duration
	// MaxAttempts is the number of consecutive failed connection attempts before Run gives up
	// (default 30, about two minutes; negative: never).
	MaxAttempts int
}

func (p ReconnectPolicy) limit() int {
	switch {
	case p.MaxAttempts < 0:
		return int(^uint(0) >> 1)
	case p.MaxAttempts == 0:
		return 30
	}
	return p.MaxAttempts
}

// backoff is the delay before attempt failures+1: full jitter in the upper half of the
// exponential ceiling.
func (p ReconnectPolicy) backoff(failures int) time.Duration {
	base, max := p.InitialDelay, p.MaxDelay
	if base <= 0 {
		base = 100 * time.Millisecond
	}
	if max <= 0 {
		max = 5 * time.Second
	}
	ceiling := base << min(failures, 20)
	if ceiling > max || ceiling <= 0 {
		ceiling = max
	}
	return ceiling/2 + time.Duration(rand.Int64N(int64(ceiling/2)+1))
}

// fatalCodes are refusals no reconnect can fix.
var fatalCodes = []string{"UNAUTHENTICATED", "PERMISSION_DENIED", "NOT_FOUND", "RESOURCE_RETIRED", "INVALID_ARGUMENT", "STATE_CONFLICT", "PROTOCOL_ERROR"}

// isFatalConnectError: a refused credential, a retired queue, a frozen-capability conflict, an
// invalid registration. The worker stops at once instead of backing off.
func isFatalConnectError(err error) bool {
	var ge *GatewayError
	if errors.As(err, &ge) {
		return contains(fatalCodes, ge.Code) || ge.Status == 401 || ge.Status == 403
	}
	var fe *FrameError
	return errors.As(err, &fe)
}
