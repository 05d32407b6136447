package group

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// groupAuthorizedOperations is the bit field of the operations on a group
// (READ, DELETE, DESCRIBE): what a group's authorized operations are
// without an authorizer.
const groupAuthorizedOperations = 1<<3 | 1<<6 | 1<<8

// authorizedOperationsOmitted is the value of authorized-operations fields
// the client did not ask for.
const authorizedOperationsOmitted = -2147483648

// handleDescribeGroups serves DescribeGroups v0-v5. An unknown group is
// described as Dead with no members, as Kafka does. A group without
// DESCRIBE is answered GROUP_AUTHORIZATION_FAILED and nothing else.
func (c *Coordinator) handleDescribeGroups(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req := kreq.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		d := kmsg.NewDescribeGroupsResponseGroup()
		d.Group = id
		d.AuthorizedOperations = authorizedOperationsOmitted
		if !groupAllowed(rc, kmsg.ACLOperationDescribe, id) {
			d.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, d)
			continue
		}
		if req.IncludeAuthorizedOperations {
			d.AuthorizedOperations = rc.AuthorizedOperations(kmsg.ACLResourceTypeGroup, id)
		}
		err := c.rt.Read(ctx, c.PartitionFor(id), func(s *shard) error {
			g := s.group(id)
			if g == nil {
				d.State = Dead.String()
				return nil
			}
			d.State = g.State().String()
			d.ProtocolType = g.ProtocolType()
			stable := g.State() == Stable
			if stable {
				d.Protocol = g.Protocol()
			}
			for _, m := range g.Members() {
				dm := kmsg.NewDescribeGroupsResponseGroupMember()
				dm.MemberID, dm.ClientID, dm.ClientHost = m.ID, m.ClientID, m.ClientHost
				if m.InstanceID != "" {
					inst := m.InstanceID
					dm.InstanceID = &inst
				}
				dm.ProtocolMetadata, dm.MemberAssignment = []byte{}, []byte{}
				if stable {
					if md := m.Metadata(g.Protocol()); md != nil {
						dm.ProtocolMetadata = md
					}
					if m.Assignment != nil {
						dm.MemberAssignment = m.Assignment
					}
				}
				d.Members = append(d.Members, dm)
			}
			return nil
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			d = kmsg.NewDescribeGroupsResponseGroup()
			d.Group = id
			d.ErrorCode = kafkaError(err).Code
			d.AuthorizedOperations = authorizedOperationsOmitted
		}
		resp.Groups = append(resp.Groups, d)
	}
	return resp, nil
}
