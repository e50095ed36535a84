package caddymodule

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
)

// adminRequest makes one request of a running Caddy's admin API as
// `caddy reload` does (caddycmd.AdminAPIRequest: every form of admin
// address, the origin Caddy checks), and turns a refusal into an error
// that reads as a sentence: the API answers JSON for programs, a person
// at a terminal reads its message.
func adminRequest(adminAddr, method, path string, header http.Header, body io.Reader) (*http.Response, error) {
	resp, err := caddycmd.AdminAPIRequest(adminAddr, method, path, header, body)
	if err != nil {
		return nil, plainAdminError(adminAddr, err)
	}
	return resp, nil
}

// adminError is the admin API's refusal: its status and its message.
type adminError struct {
	Status  int
	Message string
	// Answer is an answer that carries no message, such as the health
	// check's report with its 503: the command prints it.
	Answer []byte
}

func (e *adminError) Error() string {
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
}

// refusedPrefix begins caddycmd.AdminAPIRequest's error for an answer
// of 400 or more, which it follows with the status and the answer's body
// ("caddy responded with error: HTTP 409: {…}"). TestAdminErrorsInPlainWords
// fails if a version of Caddy words it otherwise.
const refusedPrefix = "caddy responded with error: HTTP "

// plainAdminError reads the status and message out of an error of
// caddycmd.AdminAPIRequest. A refusal's message is the body's "error",
// or "error_description" when there is one (a 503 of a store or
// registry that did not answer says there what failed); an answer with
// neither is kept whole for the command to print. An error before any
// answer says which address did not answer.
func plainAdminError(adminAddr string, err error) error {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, refusedPrefix); ok {
		code, body, _ := strings.Cut(rest, ": ")
		status, convErr := strconv.Atoi(code)
		if convErr != nil {
			return err
		}
		var answer struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		e := &adminError{Status: status}
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
