package wire

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAppendResponseHeaders(t *testing.T) {
	cases := []struct {
		name      string
		resp      kmsg.Response
		version   int16
		headerLen int
	}{
		{"Metadata v8: header v0", kmsg.NewPtrMetadataResponse(), 8, 4},
		{"Metadata v9: header v1 with tags", kmsg.NewPtrMetadataResponse(), 9, 5},
		{"ApiVersions v3 is flexible but header v0", kmsg.NewPtrApiVersionsResponse(), 3, 4},
		{"mirror response: header v1", &ListMirrorsResponse{}, 0, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.resp.SetVersion(c.version)
			out := AppendResponse([]byte("xx"), 0x01020304, c.resp)
			if string(out[:2]) != "xx" {
				t.Fatal("dst prefix clobbered")
			}
			frame := out[2:]
			if n := binary.BigEndian.Uint32(frame); int(n) != len(frame)-4 {
				t.Fatalf("size prefix %d, frame %d", n, len(frame)-4)
			}
			if binary.BigEndian.Uint32(frame[4:]) != 0x01020304 {
				t.Fatal("correlation id")
			}
			if ResponseHeaderSize(c.resp.Key(), c.version) != c.headerLen {
				t.Fatalf("ResponseHeaderSize = %d", ResponseHeaderSize(c.resp.Key(), c.version))
			}
			if c.headerLen == 5 && frame[8] != 0 {
				t.Fatal("missing empty header tag section")
			}
			body := frame[4+c.headerLen:]
			if !bytes.Equal(body, c.resp.AppendTo(nil)) {
				t.Fatal("body differs")
			}
			// The body decodes with the matching kind at the same version.
			back := c.resp.RequestKind().ResponseKind()
			back.SetVersion(c.version)
			if err := back.ReadFrom(body); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestStreamedResponseFraming(t *testing.T) {
	// What the Fetch path does: header and part of the body in memory,
	// then bytes sent from a file; the size prefix covers both.
	dst := BeginFrame(nil)
	dst = AppendResponseHeader(dst, 42, int16(kmsg.Fetch), 12)
	dst = append(dst, "in-memory"...)
	if err := FinishFrame(dst, 1000); err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint32(dst); got != uint32(5+len("in-memory")+1000) {
		t.Fatalf("size = %d", got)
	}
	if dst[8] != 0 {
		t.Fatal("Fetch v12 response header must carry tags")
	}
}
