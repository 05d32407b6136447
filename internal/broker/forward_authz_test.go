package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth/authtest"
)

// createTopicsAs sends a CreateTopics v7 of names (one partition each) and
// returns its answers by name.
func createTopicsAs(e *env, names ...string) map[string]kmsg.CreateTopicsResponseTopic {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 7, 5000
	for _, n := range names {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = n, 1, 1
		req.Topics = append(req.Topics, t)
	}
	out := map[string]kmsg.CreateTopicsResponseTopic{}
	for _, t := range e.call(req).(*kmsg.CreateTopicsResponse).Topics {
		out[t.Topic] = t
	}
	return out
}

// TestCreateTopicsAuthorization: CREATE on a topic lets it be created and
// the others are answered TOPIC_AUTHORIZATION_FAILED by the broker; a
// request refused entirely never reaches the controller; CREATE on the
// cluster covers any name; a created topic's partition count is shown only
// with DESCRIBE_CONFIGS on it.
func TestCreateTopicsAuthorization(t *testing.T) {
	e := newEnv(t, nil)
	creates := func() int {
		e.ctrl.mu.Lock()
		defer e.ctrl.mu.Unlock()
		return e.ctrl.creates
	}
	e.as(authtest.NewGrants("CREATE TOPIC mine", "CREATE TOPIC shown", "DESCRIBE_CONFIGS TOPIC shown"))
	got := createTopicsAs(e, "mine", "theirs", "shown")
	if r := got["theirs"]; r.ErrorCode != kerr.TopicAuthorizationFailed.Code || deref(r.ErrorMessage) != "Authorization failed." {
		t.Fatalf("theirs: %v %s", kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
	}
	if r := got["mine"]; r.ErrorCode != 0 || r.NumPartitions != -1 || r.ConfigErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("mine (no DESCRIBE_CONFIGS): %+v", r)
	}
	if r := got["shown"]; r.ErrorCode != 0 || r.NumPartitions != 1 || r.ConfigErrorCode != 0 {
		t.Fatalf("shown (DESCRIBE_CONFIGS): %+v", r)
	}
	img := e.b.rm.Image()
	if _, ok := img.Topic("theirs"); ok {
		t.Fatal("a refused topic was created")
	}
	if _, ok := img.Topic("mine"); !ok {
		t.Fatal("an allowed topic was not created")
	}

	before := creates()
	if r := createTopicsAs(e, "theirs", "other"); len(r) != 2 || r["other"].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("all refused: %+v", r)
	}
	if creates() != before {
		t.Fatal("a request refused entirely was forwarded to the controller")
	}

	e.as(authtest.NewGrants("CREATE CLUSTER kafka-cluster"))
	if r := createTopicsAs(e, "anything"); r["anything"].ErrorCode != 0 {
		t.Fatalf("CREATE on the cluster: %v", kerr.ErrorForCode(r["anything"].ErrorCode))
	}
}

// TestDeleteTopicsAuthorization: by name DELETE is needed; by id an
// undescribable topic is refused without its name, a describable one
// without DELETE with it; allowed topics are still deleted.
func TestDeleteTopicsAuthorization(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("gone", 1, nil)
	e.createTopic("kept", 1, nil)
	secretID := e.createTopic("secret", 1, nil)
	visibleID := e.createTopic("visible", 1, nil)
	e.as(authtest.NewGrants("DELETE TOPIC gone", "DESCRIBE TOPIC visible"))

	v5 := kmsg.NewPtrDeleteTopicsRequest()
	v5.Version, v5.TimeoutMillis, v5.TopicNames = 5, 1000, []string{"gone", "kept"}
	got := map[string]int16{}
	for _, rt := range e.call(v5).(*kmsg.DeleteTopicsResponse).Topics {
		got[deref(rt.Topic)] = rt.ErrorCode
	}
	if want := map[string]int16{"gone": 0, "kept": kerr.TopicAuthorizationFailed.Code}; !mapsEqual(got, want) {
		t.Fatalf("by name: %v, want %v", got, want)
	}
	img := e.b.rm.Image()
	if _, ok := img.Topic("gone"); ok {
		t.Fatal("allowed topic not deleted")
	}
	if _, ok := img.Topic("kept"); !ok {
		t.Fatal("refused topic deleted")
	}

	v6 := kmsg.NewPtrDeleteTopicsRequest()
	v6.Version, v6.TimeoutMillis = 6, 1000
	for _, id := range [][16]byte{secretID, visibleID} {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.TopicID = id
		v6.Topics = append(v6.Topics, rt)
	}
	r := e.call(v6).(*kmsg.DeleteTopicsResponse)
	if len(r.Topics) != 2 {
		t.Fatalf("by id: %+v", r.Topics)
	}
	for _, rt := range r.Topics {
		if rt.ErrorCode != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("by id %x: %v", rt.TopicID, kerr.ErrorForCode(rt.ErrorCode))
		}
		switch rt.TopicID {
		case secretID:
			if rt.Topic != nil {
				t.Errorf("undescribable topic's name answered: %s", *rt.Topic)
			}
		case visibleID:
			if deref(rt.Topic) != "visible" {
				t.Errorf("describable topic's name: %s", deref(rt.Topic))
			}
		}
	}
}

// TestAlterRequestsAuthorization: CreatePartitions needs ALTER per topic,
// AlterConfigs and IncrementalAlterConfigs ALTER_CONFIGS per resource (on
// the cluster for a broker); allowed resources are still changed.
func TestAlterRequestsAuthorization(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("open", 1, nil)
	e.createTopic("closed", 1, nil)
	e.as(authtest.NewGrants("ALTER_CONFIGS TOPIC open"))
	taf, caf := kerr.TopicAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code

	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.Version = 3
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = "closed", 2
	cp.Topics = append(cp.Topics, cpt)
	// Forwarding would reach the test controller, which does not serve
	// CreatePartitions: a refusal answered here is the only way to TAF.
	if r := e.call(cp).(*kmsg.CreatePartitionsResponse); len(r.Topics) != 1 || r.Topics[0].ErrorCode != taf {
		t.Fatalf("CreatePartitions without ALTER: %+v", r.Topics)
	}

	ac := kmsg.NewPtrAlterConfigsRequest()
	ac.Version = 2
	for _, res := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeTopic, "closed"}, {kmsg.ConfigResourceTypeBroker, "1"}} {
		r := kmsg.NewAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = res.typ, res.name
		ac.Resources = append(ac.Resources, r)
	}
	got := map[string]int16{}
	for _, r := range e.call(ac).(*kmsg.AlterConfigsResponse).Resources {
		got[r.ResourceName] = r.ErrorCode
	}
	if want := map[string]int16{"closed": taf, "1": caf}; !mapsEqual(got, want) {
		t.Fatalf("AlterConfigs: %v, want %v", got, want)
	}

	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ia.Version = 1
	for _, name := range []string{"open", "closed"} {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, name
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "retention.ms", kmsg.StringPtr("70000")
		r.Configs = append(r.Configs, c)
		ia.Resources = append(ia.Resources, r)
	}
	got = map[string]int16{}
	for _, r := range e.call(ia).(*kmsg.IncrementalAlterConfigsResponse).Resources {
		got[r.ResourceName] = r.ErrorCode
	}
	if want := map[string]int16{"open": 0, "closed": taf}; !mapsEqual(got, want) {
		t.Fatalf("IncrementalAlterConfigs: %v, want %v", got, want)
	}
	pollUntil(t, "open's retention.ms", func() bool { return e.partition("open", 0).Log().Config().RetentionMs == 70000 })
	if ms := e.partition("closed", 0).Log().Config().RetentionMs; ms == 70000 {
		t.Fatal("a refused resource was altered")
	}
}
