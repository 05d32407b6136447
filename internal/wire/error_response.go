package wire

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrorResponse returns the response that fails every part of req with err,
// as Kafka's AbstractRequest.getErrorResponse does: the top-level error code
// (and message) where the response has one, and the same code on every item
// the request named (each topic and partition of a Produce, each group of a
// DescribeGroups, each resource of a DescribeConfigs, ...), so that a client
// that reads only per-item codes sees the failure too. The code and message
// come from ErrorCode and ErrorMessage.
//
// It serves every kmsg request type and the mirror APIs, so the server can
// refuse any request (CLUSTER_AUTHORIZATION_FAILED) without knowing its
// shape. The response is at req's version. It never panics.
func ErrorResponse(req kmsg.Request, err error) (resp kmsg.Response) {
	code, msg := ErrorCode(err), ErrorMessage(err)
	defer func() {
		// A message type whose shape the filling does not expect still
		// gets an answer: the bare response with its defaults.
		if recover() != nil {
			resp = req.ResponseKind()
			resp.SetVersion(req.GetVersion())
		}
	}()
	resp = req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if fix := errorResponseShapes[req.Key()]; fix != nil && fix(req, resp, code, msg) {
		return resp
	}
	fillError(reflect.ValueOf(resp).Elem(), reflect.ValueOf(req).Elem(), code, msg, errorResponseAliases[req.Key()])
	return resp
}

// errorResponseAliases name, per API key, the request field a response array
// answers when the names differ (CreateAcls' Results answer its Creations).
var errorResponseAliases = map[int16]map[string]string{
	int16(kmsg.CreateACLs):           {"Results": "Creations"},
	int16(kmsg.DeleteACLs):           {"Results": "Filters"},
	int16(kmsg.FindCoordinator):      {"Coordinators": "CoordinatorKeys"},
	int16(kmsg.DescribeTransactions): {"TransactionStates": "TransactionalIDs"},
	int16(kmsg.ShareGroupDescribe):   {"Groups": "GroupIDs"},
}

// errorResponseShapes build the error response of the APIs whose response
// items do not follow from the request's by field names. They return false
// to fall back to the generic filling.
var errorResponseShapes = map[int16]func(req kmsg.Request, resp kmsg.Response, code int16, msg *string) bool{
	int16(kmsg.Produce): func(kreq kmsg.Request, kresp kmsg.Response, code int16, msg *string) bool {
		fillError(reflect.ValueOf(kresp).Elem(), reflect.ValueOf(kreq).Elem(), code, msg, nil)
		// A failed partition has no base offset (Kafka answers -1, not
		// the schema default 0).
		resp := kresp.(*kmsg.ProduceResponse)
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].BaseOffset = -1
			}
		}
		return true
	},
	int16(kmsg.AlterReplicaLogDirs): func(kreq kmsg.Request, kresp kmsg.Response, code int16, msg *string) bool {
		// The response lists the topics of every requested directory.
		req, resp := kreq.(*kmsg.AlterReplicaLogDirsRequest), kresp.(*kmsg.AlterReplicaLogDirsResponse)
		for _, d := range req.Dirs {
			for _, t := range d.Topics {
				rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
		return true
	},
	int16(kmsg.DeleteTopics): func(kreq kmsg.Request, kresp kmsg.Response, code int16, msg *string) bool {
		req, resp := kreq.(*kmsg.DeleteTopicsRequest), kresp.(*kmsg.DeleteTopicsResponse)
		if req.Version >= 6 {
			return false // Topics answer Topics
		}
		for _, n := range req.TopicNames {
			t := kmsg.NewDeleteTopicsResponseTopic()
			t.Topic, t.ErrorCode, t.ErrorMessage = &n, code, msg
			resp.Topics = append(resp.Topics, t)
		}
		return true
	},
	int16(kmsg.AlterUserSCRAMCredentials): func(kreq kmsg.Request, kresp kmsg.Response, code int16, msg *string) bool {
		req, resp := kreq.(*kmsg.AlterUserSCRAMCredentialsRequest), kresp.(*kmsg.AlterUserSCRAMCredentialsResponse)
		seen := map[string]bool{}
		add := func(user string) {
			if seen[user] {
				return
			}
			seen[user] = true
			r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			r.User, r.ErrorCode, r.ErrorMessage = user, code, msg
			resp.Results = append(resp.Results, r)
		}
		for _, d := range req.Deletions {
			add(d.Name)
		}
		for _, u := range req.Upsertions {
			add(u.Name)
		}
		return true
	},
}

// errorKeyFields are the fields that identify an item of a request and are
// copied into the item of the response that answers it. Other fields
// (counts, configs, offsets) keep the response type's defaults.
var errorKeyFields = map[string]bool{
	"Topic": true, "TopicID": true, "Partition": true, "Group": true, "Key": true,
	"MemberID": true, "GroupInstanceID": true, "ResourceType": true, "ResourceName": true,
	"TransactionalID": true, "ProducerID": true, "Name": true, "User": true, "Mirror": true, "GroupID": true,
}

// skippedFields are never copied or filled.
var skippedFields = map[string]bool{"Version": true, "UnknownTags": true, "ThrottleMillis": true}

var (
	stringType    = reflect.TypeFor[string]()
	stringPtrType = reflect.TypeFor[*string]()
	int32Type     = reflect.TypeFor[int32]()
	int16Type     = reflect.TypeFor[int16]()
)

// fillError sets the error code and message of dst (a response struct or an
// item of one) and builds its item arrays from src, the request struct or
// item that dst answers.
func fillError(dst, src reflect.Value, code int16, msg *string, aliases map[string]string) {
	t := dst.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || skippedFields[f.Name] {
			continue
		}
		fv := dst.Field(i)
		switch {
		case f.Name == "ErrorCode" && f.Type == int16Type:
			fv.SetInt(int64(code))
		case f.Name == "ErrorMessage" && f.Type == stringPtrType:
			if msg != nil {
				m := *msg
				fv.Set(reflect.ValueOf(&m))
			}
		case f.Name == "ErrorMessage" && f.Type == stringType:
			if msg != nil {
				fv.SetString(*msg)
			}
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct && hasErrorCode(f.Type.Elem(), 0):
			name := f.Name
			if a, ok := aliases[f.Name]; ok {
				name = a
			}
			if sf, ok := structField(src, name); ok && sf.Kind() == reflect.Slice {
				fv.Set(answerItems(f.Type, sf, code, msg))
			}
		case errorKeyFields[f.Name]:
			if sf, ok := structField(src, f.Name); ok && sf.Type() == f.Type {
				fv.Set(sf)
			}
		}
	}
}

// answerItems builds the response items (a slice of typ) that answer the
// request items in src: a slice of structs (each item answered field by
// field) or of names or partition numbers (DescribeGroups' group names,
// ElectLeaders' partitions), which land in the item's first key field of
// that type.
func answerItems(typ reflect.Type, src reflect.Value, code int16, msg *string) reflect.Value {
	out := reflect.MakeSlice(typ, 0, src.Len())
	elemT := typ.Elem()
	for i := range src.Len() {
		item := reflect.New(elemT)
		if d, ok := item.Interface().(interface{ Default() }); ok {
			d.Default()
		}
		sv := src.Index(i)
		if sv.Kind() == reflect.Struct {
			fillError(item.Elem(), sv, code, msg, nil)
		} else {
			fillError(item.Elem(), reflect.Value{}, code, msg, nil)
			setFirstKey(item.Elem(), sv)
		}
		out = reflect.Append(out, item.Elem())
	}
	return out
}

// setFirstKey stores a scalar request item (a name or a partition) in the
// first key field of dst that can hold it.
func setFirstKey(dst, v reflect.Value) {
	t := dst.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !errorKeyFields[f.Name] {
			continue
		}
		switch {
		case f.Type == v.Type():
			dst.Field(i).Set(v)
			return
		case f.Type == stringPtrType && v.Type() == stringType:
			s := v.String()
			dst.Field(i).Set(reflect.ValueOf(&s))
			return
		case f.Type == stringType && v.Type() == stringPtrType && !v.IsNil():
			dst.Field(i).SetString(v.Elem().String())
			return
		case f.Type == int32Type && v.Kind() == reflect.Int32:
			dst.Field(i).SetInt(v.Int())
			return
		}
	}
}

// structField returns src's field called name, if src is a struct that has
// one.
func structField(src reflect.Value, name string) (reflect.Value, bool) {
	if !src.IsValid() || src.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	f := src.FieldByName(name)
	return f, f.IsValid()
}

// hasErrorCode reports whether items of struct type t carry an error code,
// directly or in a nested array: only such arrays are answered item by item.
func hasErrorCode(t reflect.Type, depth int) bool {
	if depth > 4 {
		return false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Name == "ErrorCode" && f.Type == int16Type {
			return true
		}
		if f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct && hasErrorCode(f.Type.Elem(), depth+1) {
			return true
		}
	}
	return false
}
