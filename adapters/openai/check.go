package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Which setting a Problem is about.
const (
	SettingBaseURL = "base_url"
	SettingAPIKey  = "api_key"
	SettingModel   = "model"
)

// Problem is what Check found wrong with how the model is configured:
// the setting to look at, and one sentence saying why, with a hint where
// there is a usual mistake.
type Problem struct {
	Setting string // SettingBaseURL, SettingAPIKey or SettingModel
	Reason  string
}

func (p *Problem) Error() string { return p.Reason }

// Check asks the endpoint which models it serves — GET {base URL}/models,
// which spends no completion — and returns a *Problem when the answer
// shows the configuration is wrong: no answer at all, the key refused,
// an answer that is not the API's (a base URL without /v1, usually), or a
// model the endpoint does not list. A 404 from a base URL ending in /v1
// proves nothing (some servers do not list models) and is not a problem.
func (m *Model) Check(ctx context.Context) error {
	list, err := m.client.ListModels(ctx)
	status := statusOf(err)
	v1 := strings.HasSuffix(strings.TrimRight(m.baseURL.Path, "/"), "/v1")
	hint := ""
	if !v1 {
		hint = "; an OpenAI-compatible base URL usually ends in /v1"
	}
	switch {
	case err == nil:
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return &Problem{Setting: SettingAPIKey, Reason: fmt.Sprintf("the endpoint refused the key (%d): %s", status, detail(err))}
	case status == http.StatusNotFound && v1:
		return nil // it does not list its models; nothing is known
	case status != 0:
		return &Problem{Setting: SettingBaseURL, Reason: fmt.Sprintf("GET %s/models answered %d%s", m.base, status, hint)}
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return &Problem{Setting: SettingBaseURL, Reason: fmt.Sprintf("%s did not answer in time", m.base)}
	default:
		var uerr *url.Error
		if errors.As(err, &uerr) {
			return &Problem{Setting: SettingBaseURL, Reason: fmt.Sprintf("cannot reach %s: %v", m.base, uerr.Err)}
		}
		return &Problem{Setting: SettingBaseURL, Reason: fmt.Sprintf("GET %s/models did not answer as the OpenAI API does (%v)%s", m.base, err, hint)}
	}
	ids := make([]string, 0, len(list.Models))
	for _, md := range list.Models {
		ids = append(ids, md.ID)
	}
	if len(ids) > 0 && !slices.Contains(ids, m.model) {
		shown := ids
		if len(shown) > 10 {
			shown = append(slices.Clone(shown[:10]), "…")
		}
		return &Problem{Setting: SettingModel, Reason: fmt.Sprintf("the endpoint does not list the model %q; it lists %s", m.model, strings.Join(shown, ", "))}
	}
	return nil
}
