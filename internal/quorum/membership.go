package quorum

import (
	"context"
	"fmt"

	"github.com/hashicorp/raft"
)

// Server is a member of the quorum's current configuration.
type Server struct {
	ID    int32
	Addr  string
	Voter bool
}

// AddNonVoter adds node id, reachable at addr, as a non-voter: it
// replicates and applies the log but does not vote or lead. Broker-only
// nodes join this way, added by the leader. Adding a present server updates
// its address.
func (q *Quorum) AddNonVoter(id int32, addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), membershipTimeout)
	defer cancel()
	f := q.raft.AddNonvoter(raft.ServerID(serverID(id)), raft.ServerAddress(addr), 0, membershipTimeout)
	return q.raftErr(fmt.Sprintf("add non-voter %d@%s", id, addr), q.wait(ctx, f))
}

// AddVoter adds node id, reachable at addr, as a voter (or promotes a
// non-voter). Must be called on the leader.
func (q *Quorum) AddVoter(id int32, addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), membershipTimeout)
	defer cancel()
	f := q.raft.AddVoter(raft.ServerID(serverID(id)), raft.ServerAddress(addr), 0, membershipTimeout)
	return q.raftErr(fmt.Sprintf("add voter %d@%s", id, addr), q.wait(ctx, f))
}

// RemoveServer removes node id from the quorum. Must be called on the
// leader; a leader that removes itself steps down.
func (q *Quorum) RemoveServer(id int32) error {
	ctx, cancel := context.WithTimeout(context.Background(), membershipTimeout)
	defer cancel()
	f := q.raft.RemoveServer(raft.ServerID(serverID(id)), 0, membershipTimeout)
	return q.raftErr(fmt.Sprintf("remove server %d", id), q.wait(ctx, f))
}

// Servers returns the latest configuration known to this node, as raft
// stores it in the log (it may not be committed yet).
func (q *Quorum) Servers() ([]Server, error) {
	f := q.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, q.raftErr("servers", err)
	}
	var out []Server
	for _, s := range f.Configuration().Servers {
		id, ok := parseServerID(string(s.ID))
		if !ok {
			return nil, fmt.Errorf("servers: raft server id %q is not a node id", s.ID)
		}
		out = append(out, Server{ID: id, Addr: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	return out, nil
}
