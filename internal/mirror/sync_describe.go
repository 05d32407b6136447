package mirror

import (
	"context"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// DescribeMirrors reports each mirror's syncs as the broker that runs them
// (the leader of the mirror's sync partition of __mirror_state, see
// syncOwner) knows them: the answering broker asks it with a local-only
// DescribeMirrors request without partitions. A sync whose owner does not
// answer, or that never ran, has last_success_ms -1.

// syncStatus returns a mirror's syncs for a DescribeMirrors answer.
func (s *Describer) syncStatus(ctx context.Context, img *metadata.Image, mirror string) []wire.DescribeMirrorsResponseSync {
	placeholders := func(msg string) []wire.DescribeMirrorsResponseSync {
		out := make([]wire.DescribeMirrorsResponseSync, 0, len(SyncKinds))
		for _, k := range SyncKinds {
			sy := wire.DescribeMirrorsResponseSync{Kind: k, LastSuccessMillis: -1}
			if msg != "" {
				m := msg
				sy.LastError = &m
			}
			out = append(out, sy)
		}
		return out
	}
	owner := syncOwner(img, mirror)
	if owner < 0 {
		return placeholders("no broker runs the sync: its partition of __mirror_state has no leader")
	}
	req := &wire.DescribeMirrorsRequest{MirrorNames: []string{mirror}}
	setLocalOnly(&req.UnknownTags)
	var resp *wire.DescribeMirrorsResponse
	if owner == s.nodeID {
		resp = s.local(req)
	} else {
		addr, err := brokerAddr(img, owner, s.listener)
		if err != nil {
			return placeholders("the broker running the sync cannot be reached: " + err.Error())
		}
		rctx, cancel := context.WithTimeout(ctx, s.timeout)
		defer cancel()
		kresp, err := s.conns.request(rctx, addr, req)
		if err != nil {
			return placeholders("the broker running the sync did not answer: " + err.Error())
		}
		r, ok := kresp.(*wire.DescribeMirrorsResponse)
		if !ok {
			return placeholders("")
		}
		resp = r
	}
	for _, m := range resp.Mirrors {
		if m.Name == mirror && len(m.Syncs) > 0 {
			return m.Syncs
		}
	}
	return placeholders("")
}

// localSyncs returns the syncs of a mirror this broker runs, nil if it runs
// none.
func (m *Manager) localSyncs(mirror string) []wire.DescribeMirrorsResponseSync {
	sts, ok := m.syncs.status(mirror)
	if !ok {
		return nil
	}
	out := make([]wire.DescribeMirrorsResponseSync, 0, len(sts))
	for _, st := range sts {
		sy := wire.DescribeMirrorsResponseSync{Kind: st.kind, LastSuccessMillis: -1}
		if !st.lastSuccess.IsZero() {
			sy.LastSuccessMillis = st.lastSuccess.UnixMilli()
		}
		if st.lastError != "" {
			e := st.lastError
			sy.LastError = &e
		}
		out = append(out, sy)
	}
	return out
}
