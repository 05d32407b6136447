package broker

// FetchSessionCount exposes the number of cached fetch sessions to the
// external integration test.
func (b *Broker) FetchSessionCount() int { return b.fetchs.len() }
