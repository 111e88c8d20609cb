package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// The REST endpoints of the system shared-memory extension.

// shmRoutes adds the extension's endpoints to mux.
func (s *Server) shmRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v2/systemsharedmemory/status", s.shmStatusHTTP)
	mux.HandleFunc("GET /v2/systemsharedmemory/region/{region}/status", s.shmStatusHTTP)
	mux.HandleFunc("POST /v2/systemsharedmemory/region/{region}/register", s.shmRegisterHTTP)
	mux.HandleFunc("POST /v2/systemsharedmemory/region/{region}/unregister", s.shmUnregisterHTTP)
	mux.HandleFunc("POST /v2/systemsharedmemory/unregister", s.shmUnregisterHTTP)
}

func (s *Server) shmStatusHTTP(w http.ResponseWriter, r *http.Request) {
	st, err := s.shmStatuses(r.PathValue("region"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// maxShmRequest bounds a register request's body: three small fields.
const maxShmRequest = 64 << 10

func (s *Server) shmRegisterHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxShmRequest))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, errorf(KindTooLarge, "a register request's body is at most %d bytes", maxShmRequest))
			return
		}
		writeError(w, errorf(KindInvalid, "reading the request body: %v", err))
		return
	}
	var req struct {
		Key      *string `json:"key"`
		Offset   *int64  `json:"offset"`
		ByteSize *int64  `json:"byte_size"`
	}
	d := json.NewDecoder(bytes.NewReader(body))
	if err := d.Decode(&req); err != nil {
		writeError(w, errorf(KindInvalid, "register request JSON: %v (it is {\"key\": string, \"offset\": number, \"byte_size\": number})", err))
		return
	}
	if req.Key == nil || req.ByteSize == nil {
		writeError(w, errorf(KindInvalid, "register request: \"key\" and \"byte_size\" are required (\"offset\" defaults to 0)"))
		return
	}
	var offset int64
	if req.Offset != nil {
		offset = *req.Offset
	}
	if err := s.shmRegister(r.PathValue("region"), *req.Key, offset, *req.ByteSize); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) shmUnregisterHTTP(w http.ResponseWriter, r *http.Request) {
	if err := s.shmUnregister(r.PathValue("region")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}
