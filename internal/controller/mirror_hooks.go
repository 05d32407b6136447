package controller

// mirrorHooks are how the mirror admin decisions reach outside the metadata:
// the source clusters and the mirror coordinators. A zero value uses the
// real implementations; tests set fields to observe or fail those calls.
type mirrorHooks struct {
	querySource sourceQuerier
	readStates  stateReader
}

// sourceQuery returns the source querier in use.
func (h *mirrorHooks) sourceQuery() sourceQuerier {
	if h.querySource != nil {
		return h.querySource
	}
	return querySource
}

// stateReader returns the mirror state reader in use; c provides the real
// one.
func (h *mirrorHooks) stateReader(c *Controller) stateReader {
	if h.readStates != nil {
		return h.readStates
	}
	return c.readStatesOverWire
}
