package operator

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// AdminAPI reaches a running server's admin API. The adapter gives it
// Caddy's own way, as `caddy reload` reaches it: every form of admin
// address, the origin Caddy checks.
type AdminAPI struct {
	// Address is the admin address: --address, else the one of --config
	// (and --adapter), else the server's default.
	Address func(address, config, adapter string) (string, error)
	// Request makes one request. An answer of 400 or more is an error
	// that begins with RefusedPrefix, followed by the status and the
	// answer's body; one that never reached an answer begins with
	// "performing request: ".
	Request func(adminAddr, method, path string, header http.Header, body io.Reader) (*http.Response, error)
}

// Do makes one request of the admin API and turns a refusal into an
// error that reads as a sentence (*AdminError): the API answers JSON for
// programs, a person at a terminal reads its message.
func (api AdminAPI) Do(adminAddr, method, path string, header http.Header, body io.Reader) (*http.Response, error) {
	resp, err := api.Request(adminAddr, method, path, header, body)
	if err != nil {
		return nil, PlainError(adminAddr, err)
	}
	return resp, nil
}

// AdminError is the admin API's refusal: its status and its message.
type AdminError struct {
	Status  int
	Message string
	// Answer is an answer that carries no message, such as the health
	// check's report with its 503: the command prints it.
	Answer []byte
}

func (e *AdminError) Error() string {
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
}

// RefusedPrefix begins Caddy's error (caddycmd.AdminAPIRequest) for an
// answer of 400 or more, which it follows with the status and the
// answer's body ("caddy responded with error: HTTP 409: {…}").
// caddymodule's TestAdminErrorsInPlainWords fails if a version of Caddy
// words it otherwise.
const RefusedPrefix = "caddy responded with error: HTTP "

// PlainError reads the status and message out of an error of
// AdminAPI.Request. A refusal's message is the body's "error",
// or "error_description" when there is one (a 503 of a store or
// registry that did not answer says there what failed); an answer with
// neither is kept whole for the command to print. An error before any
// answer says which address did not answer.
func PlainError(adminAddr string, err error) error {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, RefusedPrefix); ok {
		code, body, _ := strings.Cut(rest, ": ")
		status, convErr := strconv.Atoi(code)
		if convErr != nil {
			return err
		}
		var answer struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		e := &AdminError{Status: status}
		switch {
		case json.Unmarshal([]byte(body), &answer) != nil:
			e.Message = strings.TrimSpace(body)
		case answer.Description != "":
			e.Message = answer.Description
		case answer.Error != "":
			e.Message = answer.Error
		default:
			e.Message, e.Answer = "the admin API answered "+http.StatusText(status), []byte(body)
		}
		if e.Message == "" {
			e.Message = "the admin API answered " + http.StatusText(status)
		}
		return e
	}
	if rest, ok := strings.CutPrefix(msg, "performing request: "); ok {
		return fmt.Errorf("no admin API answered at %s (is Caddy running? --address names its admin endpoint): %s", adminAddr, rest)
	}
	return err
}
