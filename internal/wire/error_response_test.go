package wire

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fillSample gives every field of v a non-zero value and every array two
// items, recursively, so that a request names topics, partitions, groups...
func fillSample(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.Type().Elem().Kind() == reflect.String {
			s := "p"
			v.Set(reflect.ValueOf(&s))
		}
	case reflect.String:
		v.SetString("s")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float64:
		v.SetFloat(1)
	case reflect.Array:
		for i := range v.Len() {
			fillSample(v.Index(i), depth)
		}
	case reflect.Slice:
		if depth > 3 {
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fillSample(s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Name == "Version" || f.Name == "UnknownTags" {
				continue
			}
			fillSample(v.Field(i), depth)
		}
	}
}

// countCode counts the ErrorCode fields of v equal to code.
func countCode(v reflect.Value, code int16) int {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		return countCode(v.Elem(), code)
	case reflect.Slice:
		n := 0
		for i := range v.Len() {
			n += countCode(v.Index(i), code)
		}
		return n
	case reflect.Struct:
		n := 0
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			if f.Name == "ErrorCode" && f.Type == int16Type && v.Field(i).Int() == int64(code) {
				n++
				continue
			}
			n += countCode(v.Field(i), code)
		}
		return n
	}
	return 0
}

// allKeys are every request key kmsg or the mirror APIs know.
func allKeys() []int16 {
	var keys []int16
	for k := int16(0); k < 200; k++ {
		if newRequest(k) != nil {
			keys = append(keys, k)
		}
	}
	return keys
}

// TestErrorResponseEveryKeyAndVersion fails a sample request of every API
// key at every version and checks that the error survives encoding at that
// version: a client reading the response sees the code somewhere (top level
// or in every item), and the body decodes.
func TestErrorResponseEveryKeyAndVersion(t *testing.T) {
	code := kerr.ClusterAuthorizationFailed.Code
	checked := 0
	for _, key := range allKeys() {
		proto := newRequest(key)
		for v := int16(0); v <= proto.MaxVersion(); v++ {
			req := newRequest(key)
			fillSample(reflect.ValueOf(req).Elem(), 0)
			req.SetVersion(v)
			// Round-trip the request so that only the fields of version v
			// remain, as a parsed request has.
			enc := req.AppendTo(nil)
			parsed := newRequest(key)
			parsed.SetVersion(v)
			if err := parsed.ReadFrom(enc); err != nil {
				t.Fatalf("%s v%d: sample request does not decode: %v", APIName(key), v, err)
			}
			resp := ErrorResponse(parsed, kerr.ClusterAuthorizationFailed)
			if resp.Key() != key || resp.GetVersion() != v {
				t.Fatalf("%s v%d: response is %s v%d", APIName(key), v, APIName(resp.Key()), resp.GetVersion())
			}
			body := resp.AppendTo(nil)
			back := parsed.ResponseKind()
			back.SetVersion(v)
			if err := back.ReadFrom(body); err != nil {
				t.Fatalf("%s v%d: error response does not decode: %v", APIName(key), v, err)
			}
			if noErrorField(key, v) {
				checked++
				continue
			}
			if n := countCode(reflect.ValueOf(back), code); n == 0 {
				t.Errorf("%s v%d: no CLUSTER_AUTHORIZATION_FAILED in the encoded response %+v", APIName(key), v, back)
			}
			checked++
		}
	}
	if checked < 350 {
		t.Fatalf("only %d key/version pairs checked", checked)
	}
}

// TestErrorResponseItems checks that items are answered one for one with
// their names, not only with a top-level code.
func TestErrorResponseItems(t *testing.T) {
	authz := kerr.TopicAuthorizationFailed

	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(9)
	for _, name := range []string{"a", "b"} {
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic = name
		for p := range int32(3) {
			pp := kmsg.NewProduceRequestTopicPartition()
			pp.Partition = p
			tp.Partitions = append(tp.Partitions, pp)
		}
		produce.Topics = append(produce.Topics, tp)
	}
	pr := ErrorResponse(produce, authz).(*kmsg.ProduceResponse)
	if len(pr.Topics) != 2 || pr.Topics[1].Topic != "b" || len(pr.Topics[1].Partitions) != 3 {
		t.Fatalf("produce topics %+v", pr.Topics)
	}
	for _, tp := range pr.Topics {
		for i, p := range tp.Partitions {
			if p.Partition != int32(i) || p.ErrorCode != authz.Code || p.BaseOffset != -1 {
				t.Fatalf("produce %s partition %+v", tp.Topic, p)
			}
		}
	}

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.SetVersion(5)
	dg.Groups = []string{"g1", "g2"}
	dr := ErrorResponse(dg, kerr.GroupAuthorizationFailed).(*kmsg.DescribeGroupsResponse)
	if len(dr.Groups) != 2 || dr.Groups[0].Group != "g1" || dr.Groups[1].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("describe groups %+v", dr.Groups)
	}

	el := kmsg.NewPtrElectLeadersRequest()
	el.SetVersion(2)
	et := kmsg.NewElectLeadersRequestTopic()
	et.Topic, et.Partitions = "t", []int32{4, 7}
	el.Topics = append(el.Topics, et)
	er := ErrorResponse(el, kerr.ClusterAuthorizationFailed).(*kmsg.ElectLeadersResponse)
	if er.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(er.Topics) != 1 || len(er.Topics[0].Partitions) != 2 ||
		er.Topics[0].Partitions[1].Partition != 7 {
		t.Fatalf("elect leaders %+v", er)
	}

	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.SetVersion(4)
	dt.TopicNames = []string{"x", "y"}
	dtr := ErrorResponse(dt, authz).(*kmsg.DeleteTopicsResponse)
	if len(dtr.Topics) != 2 || *dtr.Topics[1].Topic != "y" || dtr.Topics[0].ErrorCode != authz.Code {
		t.Fatalf("delete topics %+v", dtr.Topics)
	}

	ca := kmsg.NewPtrCreateACLsRequest()
	ca.SetVersion(3)
	ca.Creations = make([]kmsg.CreateACLsRequestCreation, 3)
	car := ErrorResponse(ca, kerr.ClusterAuthorizationFailed).(*kmsg.CreateACLsResponse)
	if len(car.Results) != 3 || car.Results[2].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("create acls %+v", car.Results)
	}

	us := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	us.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "a"}, {Name: "b"}}
	us.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{Name: "a"}, {Name: "c"}}
	usr := ErrorResponse(us, kerr.ClusterAuthorizationFailed).(*kmsg.AlterUserSCRAMCredentialsResponse)
	if len(usr.Results) != 3 || usr.Results[2].User != "c" {
		t.Fatalf("alter scram %+v", usr.Results)
	}

	// The message travels where the response has a field for it.
	dc := kmsg.NewPtrDescribeClusterRequest()
	dcr := ErrorResponse(dc, errWithText{kerr.ClusterAuthorizationFailed}).(*kmsg.DescribeClusterResponse)
	if dcr.ErrorCode != kerr.ClusterAuthorizationFailed.Code || dcr.ErrorMessage == nil || *dcr.ErrorMessage != "not allowed" {
		t.Fatalf("describe cluster %+v", dcr)
	}
}

type errWithText struct{ err error }

func (e errWithText) Error() string { return "not allowed" }
func (e errWithText) Unwrap() error { return e.err }

// noErrorField lists the responses that have no field to carry an error at
// all: Kafka answers them with empty results too.
func noErrorField(key, version int16) bool {
	return key == int16(kmsg.DescribeLogDirs) && version < 3
}
