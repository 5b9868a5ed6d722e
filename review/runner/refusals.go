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

// refusalLog counts refused requests by kind and logs them: those refused before they were
// authenticated (anyone can send them) with a rate limit, those of an authenticated worker each.
type refusalLog struct {
	log     zerolog.Logger
	sampled zerolog.Logger
	mu      sync.Mutex
	counts  map[string]int64
}

func newRefusalLog(l zerolog.Logger) *refusalLog {
	return &refusalLog{
		log:     l,
		sampled: l.Sample(&zerolog.BurstSampler{Burst: refusalBurst, Period: refusalPeriod}),
		counts:  map[string]int64{},
	}
}

// note records one refusal and logs it, unless it is unauthenticated and the rate limit is
// reached.
func (l *refusalLog) note(authenticated bool, path, kind, reason string) {
	l.mu.Lock()
	l.counts[kind]++
	n := l.counts[kind]
	l.mu.Unlock()
	log, msg := &l.log, "runner request refused"
	if !authenticated {
		log, msg = &l.sampled, "unauthenticated runner request refused (logged at most 5 per 10 s)"
	}
	log.Warn().Str("path", path).Str("refused", kind).Str("reason", reason).Int64("refused_so_far", n).Msg(msg)
}
