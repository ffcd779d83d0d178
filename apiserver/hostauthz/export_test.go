package hostauthz

import "k8s.io/utils/clock"

// SetClock has o's RBAC time its staleness by c.
func (o *Options) SetClock(c clock.PassiveClock) { o.clock = c }
