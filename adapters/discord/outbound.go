package discord

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/render"
	"github.com/taskloom/taskloom/plugin"
)

// Bounds on what is sent.
const (
	// maxControlRows is Discord's limit of action rows on a message; each
	// task's controls take one.
	maxControlRows = 5
	// partialTTL is how long the parts already delivered of a message cut
	// short by a rate limit are remembered, so that its retry sends only
	// the rest.
	partialTTL = 30 * time.Minute
	// maxReplyWait bounds the wait for a rate limit before a reply is
	// tried again, once; longer ones fail the reply.
	maxReplyWait = 5 * time.Second
)

// partialSend is what was delivered of a message before a part failed.
type partialSend struct {
	ids []string
	at  time.Time
}

// Send delivers a notification to a room: text split to Discord's 2,000
// characters, no mentions, and Pause / Resume / Cancel buttons for the
// tasks it is about on its last part. A rate limit is returned as a
// *plugin.RateLimitedError and nothing is retried here; when a later part
// fails, the retry of the same message sends only what is left.
func (a *Adapter) Send(ctx context.Context, room string, m plugin.Outgoing) (plugin.SentMessage, error) {
	out, err := a.send(ctx, room, m, "", time.Time{})
	return out, a.markGlobal(err)
}

// SendOnce delivers a notification's message as Send does, each part with
// a nonce made of key and the part's index and with enforce_nonce: Discord
// then answers a part an earlier attempt at the same message created in
// the past few minutes — this replica's or another's, before a crash or
// after a lost claim — with that message instead of posting it again.
// Discord keeps a nonce only that long, so an attempt that began (since)
// longer than nonceTrusted ago first looks in the channel's history for
// the parts it posted (postedSince), and posts only the rest.
//
// A channel that is gone (404 Unknown Channel) or forbidden (403) is an
// *plugin.UndeliverableError, which services/notify dead-letters.
func (a *Adapter) SendOnce(ctx context.Context, room string, m plugin.Outgoing, key string, since time.Time) (plugin.SentMessage, error) {
	if key == "" {
		return plugin.SentMessage{}, fmt.Errorf("discord: send to %s: no delivery key", room)
	}
	out, err := a.send(ctx, room, m, key, since)
	return out, a.markGlobal(err)
}

// Limits implements plugin.Limited with Discord's published limits, kept
// to with a margin for the clocks of both ends: 50 requests a second per
// bot, paced at 9 in any 200 ms (45 a second) and spread 22 ms apart (in
// bursts of 9, one booked a second after another met Discord's window
// with no slack, and a busy machine's uneven delays drew a few global
// 429s in half the runs of a thousand rooms); 5 messages in 5 s per
// channel — a thread is a channel of its own — paced over 5.5 s. The
// limits are the bot's, named by its token's digest, which every replica
// sending as the bot shares.
func (a *Adapter) Limits() plugin.Limits {
	return plugin.Limits{
		Bot:    plugin.BotKey(a.opts.Token),
		Global: plugin.Window{N: 9, Span: 200 * time.Millisecond},
		Spread: true,
		Room:   plugin.Window{N: 5, Span: 5500 * time.Millisecond},
		Bucket: func(room string) string {
			if channel, err := channelOf(room); err == nil {
				return channel
			}
			return room
		},
	}
}

// globalProbe is a bucket no request uses: its wait is the global one.
const globalProbe = "taskloom:global"

// markGlobal marks a rate limit as the bot's across all channels when
// discordgo holds every request (after a 429 with X-RateLimit-Global),
// so that the notification service pauses the platform, not the room.
func (a *Adapter) markGlobal(err error) error {
	var rl *plugin.RateLimitedError
	if errors.As(err, &rl) && a.bucketWait(globalProbe) > 0 {
		rl.Global = true
	}
	return err
}

// send delivers m, its parts with nonces of key when key is set; since is
// when an earlier attempt with that key began (zero: none did).
func (a *Adapter) send(ctx context.Context, room string, m plugin.Outgoing, key string, since time.Time) (plugin.SentMessage, error) {
	channel, err := channelOf(room)
	if err != nil {
		return plugin.SentMessage{}, err
	}
	parts := splitText(m.Text)
	if len(parts) == 0 {
		return plugin.SentMessage{}, nil
	}
	memo := room + "\x00" + digest(m.Text)
	if key != "" {
		memo = room + "\x00key:" + key
	}
	ids := a.delivered(memo)
	if key != "" && !since.IsZero() && a.clk.Now().Sub(since) >= nonceTrusted {
		found, err := a.postedSince(ctx, channel, parts, len(ids), since)
		if err != nil {
			return plugin.SentMessage{IDs: ids}, fmt.Errorf("discord: send to %s: look for the parts an earlier attempt posted: %w", room, undeliverable(err))
		}
		ids = append(ids, found...)
	}
	controls := a.controls(ctx, m.Approvals, slices.Concat(m.Tasks, m.Ended))
	for i := len(ids); i < len(parts); i++ {
		var comps []discordgo.MessageComponent
		if i == len(parts)-1 {
			comps = controls
		}
		var n string
		if key != "" {
			n = nonce(key, i)
		}
		var ref *discordgo.MessageReference
		if i == 0 && m.ReplyTo != "" {
			ref = replyReference(channel, m.ReplyTo)
		}
		id, err := a.post(ctx, channel, parts[i], ref, comps, n)
		if err != nil {
			a.remember(memo, ids)
			return plugin.SentMessage{IDs: ids}, fmt.Errorf("discord: send to %s (part %d of %d): %w", room, i+1, len(parts), undeliverable(err))
		}
		ids = append(ids, id)
	}
	a.remember(memo, nil)
	return plugin.SentMessage{IDs: ids}, nil
}

// Looking for what an earlier attempt posted once its nonces may be
// forgotten.
const (
	// nonceTrusted is how long after an attempt began its nonces are
	// trusted to find what it posted: Discord keeps a nonce "the past few
	// minutes".
	nonceTrusted = time.Minute
	// historyPages bounds the look, 100 messages a page.
	historyPages = 5
	// historySkew is how much before since, on this replica's clock, the
	// look reaches, for Discord's clock and ours to differ.
	historySkew = 30 * time.Second
)

// postedSince returns the IDs of the bot's messages in channel since the
// attempt that began at since that carry parts[from:], in order: what
// that attempt posted. A part is known by its text, the only mark Discord
// keeps of it once the nonce is gone; a message with the same text that
// the bot posted meanwhile for another reason is taken for the part — it
// says the same. Without Read Message History Discord lists no messages,
// and every part is posted again.
func (a *Adapter) postedSince(ctx context.Context, channel string, parts []string, from int, since time.Time) ([]string, error) {
	if from >= len(parts) {
		return nil, nil
	}
	bot := a.botID()
	if bot == "" { // no READY yet
		me, err := a.sess.User("@me", discordgo.WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("read the bot's own user: %w", rateLimited(err))
		}
		bot = me.ID
	}
	endpoint := discordgo.EndpointChannelMessages(channel)
	var mine []*discordgo.Message // newest first, as Discord lists them
	before := ""
	for range historyPages {
		if wait := a.bucketWait(endpoint); wait > 0 {
			return nil, &plugin.RateLimitedError{RetryAfter: wait, Err: errors.New("discord: the channel's rate limit is exhausted")}
		}
		page, err := a.sess.ChannelMessages(channel, 100, before, "", "", discordgo.WithContext(ctx))
		if err != nil {
			return nil, rateLimited(err)
		}
		older := false
		for _, m := range page {
			if m.Timestamp.Before(since.Add(-historySkew)) {
				older = true
				break
			}
			if m.Author != nil && m.Author.ID == bot {
				mine = append(mine, m)
			}
		}
		if older || len(page) < 100 {
			break
		}
		before = page[len(page)-1].ID
	}
	var ids []string
	next := from
	for i := len(mine) - 1; i >= 0 && next < len(parts); i-- {
		if mine[i].Content == parts[next] {
			ids = append(ids, mine[i].ID)
			next++
		}
	}
	return ids, nil
}

// maxNonce is Discord's limit on a message nonce.
const maxNonce = 25

// nonce names part i of the message key: "<key>.<i>", or, when that is
// longer than Discord takes, a digest of it.
func nonce(key string, i int) string {
	n := key + "." + strconv.Itoa(i)
	if len(n) <= maxNonce {
		return n
	}
	return "n" + digest(n)[:maxNonce-1]
}

// undeliverable marks err undeliverable when Discord refused the request
// itself, so that sending the same message again can only be refused
// again: the channel does not exist (404 Unknown Channel) or may not be
// posted in (403: Missing Access, Missing Permissions, a user who accepts
// no DMs), or the message is one Discord does not take (400 Invalid Form
// Body, 413, and the other 4xx). A message is sent as it was first
// rendered on every attempt, so such a message would otherwise hold its
// room until it is given up a day later. Not so: 401 (the bot's token,
// which the operator can fix, and every other message fails with it
// too), 408 and 429 (try again later), 404 of anything but the channel.
func undeliverable(err error) error {
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Response == nil {
		return err
	}
	switch code := re.Response.StatusCode; {
	case code == http.StatusUnauthorized, code == http.StatusRequestTimeout, code == http.StatusTooManyRequests:
		return err
	case code == http.StatusNotFound:
		if re.Message != nil && re.Message.Code == discordgo.ErrCodeUnknownChannel {
			return &plugin.UndeliverableError{Err: err}
		}
		return err
	case code >= 400 && code < 500:
		return &plugin.UndeliverableError{Err: err}
	}
	return err
}

// delivered returns the parts of a message already delivered, forgetting
// entries too old to be retries.
func (a *Adapter) delivered(key string) []string {
	now := a.clk.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, p := range a.partial {
		if now.Sub(p.at) > partialTTL {
			delete(a.partial, k)
		}
	}
	return append([]string(nil), a.partial[key].ids...)
}

func (a *Adapter) remember(key string, ids []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(ids) == 0 {
		delete(a.partial, key)
		return
	}
	a.partial[key] = partialSend{ids: append([]string(nil), ids...), at: a.clk.Now()}
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// channelOf is the channel a room names: "discord:<channel>", or the
// thread of "discord:<channel>:<thread>" (a thread is a channel).
func channelOf(room string) (string, error) {
	rest, ok := strings.CutPrefix(room, Name+":")
	if ok {
		parts := strings.Split(rest, ":")
		if id := parts[len(parts)-1]; id != "" {
			return id, nil
		}
	}
	return "", fmt.Errorf("discord: %q is not a Discord room", room)
}

// reply answers a message in its channel, as a reply to it on the first
// part, and returns that part's ID. Discord has no ephemeral messages
// outside interactions, so Ephemeral is not applied. A rate limit is
// returned at once when the runtime can queue the reply in the outbox
// (queueable): it is durable there at once, and the outbox sends it when
// the limit allows, on any replica; otherwise a short one is waited out
// once. With r.Key, each part carries a nonce of it with
// enforce_nonce, as SendOnce's do: when this send fails, the outbox sends
// the reply under the same key, and Discord answers a part this attempt
// posted after all with that part.
func (a *Adapter) reply(ctx context.Context, channelID, messageID string, r plugin.Response) (string, error) {
	parts := splitText(r.Text)
	var first string
	controls := a.controls(ctx, nil, taskNumbers(r.TaskNumber))
	for i, p := range parts {
		var ref *discordgo.MessageReference
		if i == 0 {
			ref = replyReference(channelID, messageID)
		}
		var comps []discordgo.MessageComponent
		if i == len(parts)-1 {
			comps = controls
		}
		var n string
		if r.Key != "" {
			n = nonce(r.Key, i)
		}
		if i == 0 && a.queueable(r) {
			// Booked with the channel's other messages
			// (plugin.ReplyPacer): a channel at its limit leaves the
			// reply to the outbox, due when it has room. Later parts
			// of a long reply are not booked.
			if err := a.rt.ReplyTurn(ctx, Name+":"+channelID); err != nil {
				return first, fmt.Errorf("discord: reply in %s: %w", channelID, err)
			}
		}
		id, err := a.post(ctx, channelID, p, ref, comps, n)
		var rl *plugin.RateLimitedError
		if errors.As(err, &rl) && rl.RetryAfter <= maxReplyWait && !a.queueable(r) {
			if err := clock.Sleep(ctx, a.clk, rl.RetryAfter); err != nil {
				return first, fmt.Errorf("discord: reply in %s: %w", channelID, err)
			}
			id, err = a.post(ctx, channelID, p, ref, comps, n)
		}
		if err != nil {
			return first, fmt.Errorf("discord: reply in %s: %w", channelID, err)
		}
		if i == 0 {
			first = id
		}
	}
	return first, nil
}

// queueable says whether the runtime queues r in the outbox when its
// direct send fails: a reply that is not ephemeral, with a store.
func (a *Adapter) queueable(r plugin.Response) bool {
	return !r.Ephemeral && a.rt.Store() != nil
}

// replyReference makes a message a reply to messageID in channel, and
// still postable when that message is gone.
func replyReference(channelID, messageID string) *discordgo.MessageReference {
	no := false
	return &discordgo.MessageReference{MessageID: messageID, ChannelID: channelID, FailIfNotExists: &no}
}

// post sends one message of at most 2,000 characters and returns its ID;
// with a nonce, the message carries it with enforce_nonce. When discordgo
// knows the channel's bucket (or the global limit) to be exhausted, it
// returns a *plugin.RateLimitedError at once instead of letting discordgo
// sleep through it.
func (a *Adapter) post(ctx context.Context, channelID, content string, ref *discordgo.MessageReference, comps []discordgo.MessageComponent, nonce string) (string, error) {
	endpoint := discordgo.EndpointChannelMessages(channelID)
	if wait := a.bucketWait(endpoint); wait > 0 {
		return "", &plugin.RateLimitedError{RetryAfter: wait, Err: errors.New("discord: the channel's rate limit is exhausted")}
	}
	data := &discordgo.MessageSend{Content: content, AllowedMentions: noMentions(), Reference: ref, Components: comps}
	if nonce == "" {
		m, err := a.sess.ChannelMessageSendComplex(channelID, data, discordgo.WithContext(ctx))
		if err != nil {
			return "", rateLimited(err)
		}
		return m.ID, nil
	}
	// discordgo's MessageSend has no nonce: the same request, made with
	// the fields added, through discordgo's rate limiter.
	raw, err := a.sess.RequestWithBucketID(http.MethodPost, endpoint, messageWithNonce{MessageSend: data, Nonce: nonce, EnforceNonce: true},
		endpoint, discordgo.WithContext(ctx))
	if err != nil {
		return "", rateLimited(err)
	}
	var m discordgo.Message
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", fmt.Errorf("discord: read the created message: %w", err)
	}
	return m.ID, nil
}

// messageWithNonce is Create Message's body with the nonce fields
// discordgo does not have.
type messageWithNonce struct {
	*discordgo.MessageSend
	Nonce        string `json:"nonce"`
	EnforceNonce bool   `json:"enforce_nonce"`
}

// bucketWait is how long discordgo would sleep before a request in the
// bucket key names.
func (a *Adapter) bucketWait(key string) time.Duration {
	rl := a.sess.Ratelimiter
	b := rl.GetBucket(key)
	b.Lock()
	defer b.Unlock()
	return rl.GetWaitTime(b, 1)
}

// rateLimited turns discordgo's 429 into a *plugin.RateLimitedError.
func rateLimited(err error) error {
	var rle *discordgo.RateLimitError
	if !errors.As(err, &rle) {
		return err
	}
	wait := time.Second
	if rle.RateLimit != nil && rle.TooManyRequests != nil && rle.RetryAfter > 0 {
		wait = rle.RetryAfter
	}
	return &plugin.RateLimitedError{RetryAfter: wait, Err: err}
}

func interactionError(what string, in *discordgo.Interaction, err error) error {
	return fmt.Errorf("discord: %s interaction %s: %w", what, in.ID, rateLimited(err))
}

// noMentions lets a message ping no one — no user, role, @everyone or
// replied-to author — whatever its text contains.
func noMentions() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
}

// splitText cuts text to Discord's limit, dropping blank parts. The last
// part, which carries the buttons, keeps the text's end whole when it fits
// (render.SplitKeepingEnd): a request to approve shows all of its call
// above its Approve.
func splitText(text string) []string {
	var parts []string
	for _, p := range render.SplitKeepingEnd(strings.TrimRight(text, "\n"), render.DiscordLimit) {
		if strings.TrimSpace(p) != "" {
			parts = append(parts, p)
		}
	}
	return parts
}

func taskNumbers(n int64) []int64 {
	if n <= 0 {
		return nil
	}
	return []int64{n}
}

// controls are the buttons of the tasks a message is about, one row per
// task: Approve, Deny and Cancel for each approval request the message
// shows that is still pending, the buttons carrying the request's id;
// Pause or Resume (as the task's status allows) and Cancel for another
// task that has not ended, Retry for one that has. A task waiting on an
// approval gets Approve only where its call is shown.
func (a *Adapter) controls(ctx context.Context, approvals []plugin.ApprovalRef, numbers []int64) []discordgo.MessageComponent {
	st := a.rt.Store()
	if st == nil {
		return nil
	}
	var rows []discordgo.MessageComponent
	seen := map[int64]bool{}
	task := func(n int64) (domain.Task, bool) {
		if seen[n] || len(rows) == maxControlRows {
			return domain.Task{}, false
		}
		seen[n] = true
		t, err := st.GetTask(ctx, n)
		if err != nil {
			if !errors.Is(err, domain.ErrNotFound) {
				a.log.Warn("cannot read a task for its buttons", "task", n, "err", err)
			}
			return domain.Task{}, false
		}
		return t, true
	}
	for _, ref := range approvals {
		t, ok := task(ref.Task)
		if !ok || domain.ApprovalID(t) != ref.Call {
			continue
		}
		n := t.Number
		rows = append(rows, discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.Button{Label: fmt.Sprintf("Approve #%d", n), Style: discordgo.SuccessButton, CustomID: decisionID("approve", n, ref.Call)},
			discordgo.Button{Label: fmt.Sprintf("Deny #%d", n), Style: discordgo.DangerButton, CustomID: decisionID("deny", n, ref.Call)},
			discordgo.Button{Label: fmt.Sprintf("Cancel #%d", n), Style: discordgo.SecondaryButton, CustomID: buttonID("cancel", n)},
		}})
	}
	for _, n := range numbers {
		t, ok := task(n)
		if !ok {
			continue
		}
		if t.Status.Terminal() {
			rows = append(rows, discordgo.ActionsRow{Components: []discordgo.MessageComponent{
				discordgo.Button{Label: fmt.Sprintf("Retry #%d", n), Style: discordgo.SecondaryButton, CustomID: buttonID("retry", n)},
			}})
			continue
		}
		first := discordgo.Button{Label: fmt.Sprintf("Pause #%d", n), Style: discordgo.SecondaryButton, CustomID: buttonID("pause", n)}
		if t.Status == domain.StatusPaused {
			first = discordgo.Button{Label: fmt.Sprintf("Resume #%d", n), Style: discordgo.PrimaryButton, CustomID: buttonID("resume", n)}
		}
		rows = append(rows, discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			first,
			discordgo.Button{Label: fmt.Sprintf("Cancel #%d", n), Style: discordgo.DangerButton, CustomID: buttonID("cancel", n)},
		}})
	}
	return rows
}
