package controller

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
)

// decideAlterConfigs validates a (legacy) AlterConfigs request, which
// replaces every dynamic config of each resource with the given set, and
// returns the ConfigRecords and the response. Configs of the resource that
// are not in the set are removed, except a topic's mirror.name, which only
// the mirror APIs change. Each resource fails or succeeds on its own.
func decideAlterConfigs(v *view, req *kmsg.AlterConfigsRequest) ([]metadata.Record, *kmsg.AlterConfigsResponse) {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	resp.Version = req.Version
	dup := duplicateResources(req.Resources, func(r kmsg.AlterConfigsRequestResource) metadata.ConfigResource {
		return metadata.ConfigResource{Type: int8(r.ResourceType), Name: r.ResourceName}
	})
	var recs []metadata.Record
	for _, r := range req.Resources {
		res := kmsg.NewAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = r.ResourceType, r.ResourceName
		rrecs, err := alterResource(v, r, dup)
		if err != nil {
			res.ErrorCode, res.ErrorMessage = codeOf(err), messageOf(err)
		} else {
			recs = append(recs, rrecs...)
		}
		resp.Resources = append(resp.Resources, res)
	}
	return recs, resp
}

func alterResource(v *view, r kmsg.AlterConfigsRequestResource, dup map[metadata.ConfigResource]bool) ([]metadata.Record, error) {
	img := v.img
	if dup[metadata.ConfigResource{Type: int8(r.ResourceType), Name: r.ResourceName}] {
		return nil, errDuplicateResource
	}
	res, err := configResource(img, r.ResourceType, r.ResourceName)
	if err != nil {
		return nil, err
	}
	changes := map[string]*string{}
	for _, c := range r.Configs {
		if _, ok := changes[c.Name]; ok {
			return nil, errf(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		if c.Value == nil {
			return nil, errf(kerr.InvalidRequest, "Null value not supported for : %s", c.Name)
		}
		changes[c.Name] = c.Value
	}
	for name := range img.Configs(res) {
		if _, ok := changes[name]; !ok && !(res.Type == metadata.ResourceTopic && name == config.MirrorNameConfig) {
			changes[name] = nil
		}
	}
	return configRecords(v, res, changes, "")
}

// alterConfigs is the driver of AlterConfigs.
func (c *Controller) alterConfigs(req *kmsg.AlterConfigsRequest) (kmsg.Response, error) {
	var resp *kmsg.AlterConfigsResponse
	err := c.decide(func(v *view) error {
		var recs []metadata.Record
		recs, resp = decideAlterConfigs(v, req)
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
