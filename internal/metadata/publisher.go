package metadata

// Publisher is a part of a node that follows the metadata: the broker's
// replica manager, the mirror metadata manager, caches. The metadata log
// calls OnMetadataUpdate from a single goroutine, in log order, with every
// change: first once with the whole current image (a delta from the empty
// image), then with each later delta (several log entries may be coalesced
// into one delta). img is the image the delta produced.
//
// OnMetadataUpdate must not modify delta or img and should return promptly:
// while it runs, later updates queue up (coalesced) for every publisher.
type Publisher interface {
	// Name identifies the publisher in logs.
	Name() string
	// OnMetadataUpdate is called with each delta and the image it produced.
	OnMetadataUpdate(delta *Delta, img *Image)
}
