package controller

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
)

// decideIncrementalAlterConfigs validates an IncrementalAlterConfigs
// request and returns the ConfigRecords and the response. Operations per
// key: SET a value, DELETE it (back to the default), and for list configs
// APPEND elements not present yet or SUBTRACT elements, starting from the
// config's default when it is not set. Each resource fails or succeeds as
// a whole and on its own.
func decideIncrementalAlterConfigs(v *view, req *kmsg.IncrementalAlterConfigsRequest) ([]metadata.Record, *kmsg.IncrementalAlterConfigsResponse) {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	resp.Version = req.Version
	dup := duplicateResources(req.Resources, func(r kmsg.IncrementalAlterConfigsRequestResource) metadata.ConfigResource {
		return metadata.ConfigResource{Type: int8(r.ResourceType), Name: r.ResourceName}
	})
	var recs []metadata.Record
	for _, r := range req.Resources {
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = r.ResourceType, r.ResourceName
		rrecs, err := incrementalAlterResource(v, r, dup, syncingMirror(req))
		if err != nil {
			res.ErrorCode, res.ErrorMessage = codeOf(err), messageOf(err)
		} else {
			recs = append(recs, rrecs...)
		}
		resp.Resources = append(resp.Resources, res)
	}
	return recs, resp
}

func incrementalAlterResource(v *view, r kmsg.IncrementalAlterConfigsRequestResource, dup map[metadata.ConfigResource]bool, syncMirror string) ([]metadata.Record, error) {
	img := v.img
	if dup[metadata.ConfigResource{Type: int8(r.ResourceType), Name: r.ResourceName}] {
		return nil, errDuplicateResource
	}
	res, err := configResource(img, r.ResourceType, r.ResourceName)
	if err != nil {
		return nil, err
	}
	current := img.Configs(res)
	changes := map[string]*string{}
	for _, c := range r.Configs {
		if _, ok := changes[c.Name]; ok {
			return nil, errf(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		if res.Type == metadata.ResourceTopic && c.Name == config.MirrorNameConfig {
			return nil, errMirrorNameManaged
		}
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if c.Value == nil {
				return nil, errf(kerr.InvalidRequest, "Null value not supported for : %s", c.Name)
			}
			changes[c.Name] = c.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			changes[c.Name] = nil
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if c.Value == nil {
				return nil, errf(kerr.InvalidRequest, "Null value not supported for : %s", c.Name)
			}
			def, ok := configDefinition(res, c.Name)
			if !ok {
				return nil, errf(kerr.InvalidConfig, "Unknown config name: %s", c.Name)
			}
			if def.Type != config.TypeList {
				verb := "append"
				if c.Op == kmsg.IncrementalAlterConfigOpSubtract {
					verb = "subtract"
				}
				return nil, errf(kerr.InvalidConfig, "Config value %s is not allowed for config key: %s", verb, c.Name)
			}
			base, set := current[c.Name]
			if !set && def.Default != nil {
				base = *def.Default
			}
			items := listItems(base)
			for _, x := range listItems(*c.Value) {
				if c.Op == kmsg.IncrementalAlterConfigOpAppend {
					if !slices.Contains(items, x) {
						items = append(items, x)
					}
				} else {
					items = slices.DeleteFunc(items, func(y string) bool { return y == x })
				}
			}
			joined := strings.Join(items, ",")
			changes[c.Name] = &joined
		default:
			return nil, errf(kerr.InvalidRequest, "Unknown operations type %d", int8(c.Op))
		}
	}
	return configRecords(v, res, changes, syncMirror)
}

// listItems splits a list config's text, dropping empty elements.
func listItems(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// incrementalAlterConfigs is the driver of IncrementalAlterConfigs.
func (c *Controller) incrementalAlterConfigs(req *kmsg.IncrementalAlterConfigsRequest) (kmsg.Response, error) {
	var resp *kmsg.IncrementalAlterConfigsResponse
	err := c.decide(func(v *view) error {
		var recs []metadata.Record
		recs, resp = decideIncrementalAlterConfigs(v, req)
		if len(recs) == 0 || req.ValidateOnly {
			return nil
		}
		if _, err := c.propose(recs); err != nil {
			perr := proposeError(err)
			for i := range resp.Resources {
				if r := &resp.Resources[i]; r.ErrorCode == 0 {
					r.ErrorCode, r.ErrorMessage = codeOf(perr), messageOf(perr)
				}
			}
		}
		return nil
	})
	if err != nil {
		return errorResponse(req, err)
	}
	return resp, nil
}
