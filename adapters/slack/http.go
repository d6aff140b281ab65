package slack

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
)

// HTTP Events API limits.
const (
	// MaxBody caps a request body; Slack's are a few kilobytes.
	MaxBody = 256 << 10
	// SignatureWindow is how far a request's timestamp may be from the
	// clock, as Slack recommends, so a captured request cannot be replayed
	// later.
	SignatureWindow = 5 * time.Minute
)

// Paths of the request URLs (Event Subscriptions, the /task command's
// Request URL, Interactivity), as the app manifest names them.
const (
	PathEvents       = "/slack/events"
	PathCommands     = "/slack/commands"
	PathInteractions = "/slack/interactions"
)

// HTTPHandler serves the HTTP Events API: POST /slack/events (the URL
// verification challenge and event callbacks), /slack/commands (the /task
// slash command) and /slack/interactions (button presses). Every request
// must be signed with the signing secret within SignatureWindow; any other
// gets 401 and changes nothing. Mount it on the service's listener for
// "/slack/".
func (a *Adapter) HTTPHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathEvents, a.verified(a.serveEvents))
	mux.HandleFunc("POST "+PathCommands, a.verified(a.serveCommand))
	mux.HandleFunc("POST "+PathInteractions, a.verified(a.serveInteraction))
	return mux
}

// verified reads a request's body, at most MaxBody, and passes it on only
// when its signature holds.
func (a *Adapter) verified(next func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "cannot read the request body", http.StatusBadRequest)
			return
		}
		if err := a.verify(r.Header, body); err != nil {
			a.log.Warn("refused a Slack request", "path", r.URL.Path, "reason", err)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		if _, started := a.identity(); !started {
			http.Error(w, "not started", http.StatusServiceUnavailable)
			return
		}
		next(w, r, body)
	}
}

// Why a signature is refused.
var (
	errNoSecret     = errors.New("no signing secret is configured")
	errNoSignature  = errors.New("no X-Slack-Signature or X-Slack-Request-Timestamp")
	errStale        = errors.New("timestamp outside the five-minute window")
	errBadSignature = errors.New("signature does not match")
)

// verify checks Slack's v0 signature: X-Slack-Signature is "v0=" and the
// hex HMAC-SHA256, keyed with the signing secret, of
// "v0:<X-Slack-Request-Timestamp>:<body>", and the timestamp is within
// SignatureWindow of the adapter's clock. (slack.NewSecretsVerifier does
// the same against the wall clock; this one keeps to the injected clock.)
func (a *Adapter) verify(h http.Header, body []byte) error {
	if a.opts.SigningSecret == "" {
		return errNoSecret
	}
	sig, stamp := h.Get("X-Slack-Signature"), h.Get("X-Slack-Request-Timestamp")
	if sig == "" || stamp == "" {
		return errNoSignature
	}
	secs, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: timestamp %q", errNoSignature, stamp)
	}
	if d := a.clk.Now().Sub(time.Unix(secs, 0)); d > SignatureWindow || d < -SignatureWindow {
		return fmt.Errorf("%w: %s off", errStale, d.Round(time.Second))
	}
	hexSig, ok := strings.CutPrefix(sig, "v0=")
	got, err := hex.DecodeString(hexSig)
	if !ok || err != nil {
		return errBadSignature
	}
	mac := hmac.New(sha256.New, []byte(a.opts.SigningSecret))
	fmt.Fprintf(mac, "v0:%s:", stamp)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return errBadSignature
	}
	return nil
}

// serveEvents answers the URL verification challenge, and acknowledges an
// event callback once its message is stored (onEvent), handling it after;
// one not stored in time is answered 503, and Slack retries it.
func (a *Adapter) serveEvents(w http.ResponseWriter, r *http.Request, body []byte) {
	ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	if err != nil {
		// An event type slack-go does not know, or a malformed one:
		// acknowledged, or Slack would retry it.
		a.log.Debug("unreadable event; acknowledged and ignored", "err", err)
		w.WriteHeader(http.StatusOK)
		return
	}
	switch ev.Type {
	case slackevents.URLVerification:
		uv, ok := ev.Data.(*slackevents.EventsAPIURLVerificationEvent)
		if !ok {
			http.Error(w, "bad url_verification", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"challenge": uv.Challenge})
	case slackevents.CallbackEvent:
		attempt, _ := strconv.Atoi(r.Header.Get("X-Slack-Retry-Num"))
		if !a.onEvent(ev, attempt, r.Header.Get("X-Slack-Retry-Reason")) {
			// Not stored yet: Slack retries an event not acknowledged.
			http.Error(w, "the message could not be stored yet", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	default:
		w.WriteHeader(http.StatusOK) // app_rate_limited and the like
		a.log.Info("Slack event acknowledged", "type", ev.Type)
	}
}

// serveCommand answers a slash command within Slack's three seconds: with
// the answer when it is ready within AckWindow, else empty, the answer
// following through the response URL.
func (a *Adapter) serveCommand(w http.ResponseWriter, r *http.Request, body []byte) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "malformed form", http.StatusBadRequest)
		return
	}
	if form.Get("ssl_check") == "1" {
		w.WriteHeader(http.StatusOK)
		return
	}
	cmd := slackapi.SlashCommand{
		TeamID: form.Get("team_id"), TeamDomain: form.Get("team_domain"), EnterpriseID: form.Get("enterprise_id"),
		ChannelID: form.Get("channel_id"), ChannelName: form.Get("channel_name"),
		UserID: form.Get("user_id"), UserName: form.Get("user_name"), Command: form.Get("command"),
		Text: form.Get("text"), ResponseURL: form.Get("response_url"), TriggerID: form.Get("trigger_id"),
		APIAppID: form.Get("api_app_id"),
	}
	if cmd.ChannelID == "" || cmd.UserID == "" {
		http.Error(w, "not a slash command", http.StatusBadRequest)
		return
	}
	a.onCommand(cmd, func(answer []byte) {
		if len(answer) == 0 {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(answer)
	})
}

// serveInteraction acknowledges a button press at once and handles it
// after; a modal's submission is answered when its answer is ready (within
// AckWindow), since the answer may be errors to show in the modal.
func (a *Adapter) serveInteraction(w http.ResponseWriter, _ *http.Request, body []byte) {
	form, err := url.ParseQuery(string(body))
	if err != nil || form.Get("payload") == "" {
		http.Error(w, "no payload", http.StatusBadRequest)
		return
	}
	var cb slackapi.InteractionCallback
	if err := json.Unmarshal([]byte(form.Get("payload")), &cb); err != nil {
		http.Error(w, "malformed payload", http.StatusBadRequest)
		return
	}
	if cb.Type == slackapi.InteractionTypeViewSubmission {
		a.onViewSubmission(cb, func(answer []byte) {
			if len(answer) == 0 {
				w.WriteHeader(http.StatusOK)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(answer)
		})
		return
	}
	w.WriteHeader(http.StatusOK)
	a.onInteraction(cb)
}
