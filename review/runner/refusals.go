package runner

import (
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// refusalBurst and refusalPeriod bound the refusals logged: at most refusalBurst lines per
// refusalPeriod, each carrying the count of refusals of its kind so far, so that a flood of
// refused requests neither floods the log nor goes unseen.
const (
	refusalBurst  = 5
	refusalPeriod = 10 * time.Second
)

// refusalLog counts refused requests by kind and logs them with a rate limit.
type refusalLog struct {
	log    zerolog.Logger
	mu     sync.Mutex
	counts map[string]int64
}

func newRefusalLog(l zerolog.Logger) *refusalLog {
	return &refusalLog{
		log:    l.Sample(&zerolog.BurstSampler{Burst: refusalBurst, Period: refusalPeriod}),
		counts: map[string]int64{},
	}
}

// note records one refusal and logs it unless the rate limit is reached.
func (l *refusalLog) note(path, kind, reason string) {
	l.mu.Lock()
	l.counts[kind]++
	n := l.counts[kind]
	l.mu.Unlock()
	l.log.Warn().Str("path", path).Str("refused", kind).Str("reason", reason).Int64("refused_so_far", n).
		Msg("runner request refused (logged at most 5 per 10 s)")
}
