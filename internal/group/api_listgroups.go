package group

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// classicGroupType is the type of every group this coordinator serves
// (ListGroups v5).
const classicGroupType = "classic"

// handleListGroups serves ListGroups v0-v5: the groups of every
// __consumer_offsets partition this node leads, filtered by state (v4+) and
// type (v5+). While a partition loads the answer carries
// COORDINATOR_LOAD_IN_PROGRESS with the groups known so far. DESCRIBE on
// the cluster lists every group; without it only the groups the principal
// may DESCRIBE are listed, the others left out silently.
func (c *Coordinator) handleListGroups(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req := kreq.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	listAll := rc.AuthorizeCluster(kmsg.ACLOperationDescribe)
	var states []State
	if req.Version >= 4 {
		for _, name := range req.StatesFilter {
			if s, ok := ParseState(name); ok {
				states = append(states, s)
			} else {
				states = append(states, -1) // matches nothing
			}
		}
	}
	if req.Version >= 5 && len(req.TypesFilter) > 0 {
		if !slices.ContainsFunc(req.TypesFilter, func(t string) bool { return strings.EqualFold(t, classicGroupType) }) {
			return resp, nil
		}
	}
	loading, err := c.rt.ReadAll(ctx, func(_ int32, s *shard) error {
		for _, id := range s.groupIDs() {
			g := s.groups[id]
			if len(states) > 0 && !slices.Contains(states, g.State()) {
				continue
			}
			if !listAll && !groupAllowed(rc, kmsg.ACLOperationDescribe, id) {
				continue
			}
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group = id
			lg.ProtocolType = g.ProtocolType()
			lg.GroupState = g.State().String()
			lg.GroupType = classicGroupType
			resp.Groups = append(resp.Groups, lg)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if loading {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
	}
	return resp, nil
}
