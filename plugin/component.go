package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// Plugin bundles what one feature adds to the runtime. Only Name is
// required.
type Plugin struct {
	Name         string
	Description  string
	Dependencies []string // names of plugins that must start first
	// Init runs once, in dependency order, before the plugin's services
	// start. It may register more components through rt.
	Init       func(ctx context.Context, rt *Runtime) error
	Actions    []Action
	Providers  []Provider
	Evaluators []Evaluator
	Services   []Service
	Models     map[ModelType]Model
	// Routes are mounted under /plugins/<name>/.
	Routes []Route
	Events map[EventType][]EventHandler
	// Platforms deliver outgoing messages to rooms ("discord:123").
	Platforms []Platform
}

// Platform delivers messages to the rooms of one chat platform. Rooms are
// named "<platform>:<channel>[:<thread>]", and Name is that prefix
// ("discord", "slack", "console").
type Platform interface {
	Name() string
	// Send delivers text to a room, splitting it to the platform's limits.
	// A rate limit is a *RateLimitedError; nothing is retried inside.
	Send(ctx context.Context, room string, m Outgoing) (SentMessage, error)
}

// Outgoing is a message the bot sends on its own (notifications, task
// posts), not as a reply.
type Outgoing struct {
	Text string
	// Tasks the message is about, for controls (Pause/Resume/Cancel).
	Tasks []int64
	// Ended are the tasks whose end the message reports, for a Retry
	// button.
	Ended []int64
	// Approvals are the tool calls the message asks a person to approve,
	// for Approve / Deny buttons that carry the request's id.
	Approvals []ApprovalRef
	// ReplyTo is the platform message the message answers (a reply sent
	// through the outbox), "" for none; a platform without replies to a
	// message (Slack's room is the thread already) ignores it.
	ReplyTo string
}

// ApprovalRef names one approval request: the task, and the id of the
// call it asks to make (ApprovalID).
type ApprovalRef struct {
	Task int64
	Call string
}

// SentMessage is what the platform says it delivered.
type SentMessage struct {
	IDs []string // platform message IDs, one per part sent
}

// ReplyPacer paces the direct replies to people with what else is sent
// to their rooms, so that a reply neither breaks a platform's limit nor
// earns the room's next messages a 429 (Runtime.SetReplyPacer).
type ReplyPacer interface {
	// ReplyTurn books one post to room now when the platform's windows
	// have room, returning nil; otherwise it books nothing and returns a
	// *RateLimitedError wrapping ErrPaced whose RetryAfter says when they
	// will. A pacer that cannot tell (its store is down) lets the reply go.
	ReplyTurn(ctx context.Context, room string) error
	// ReplyLimited tells the pacer that the platform answered a reply
	// to room with 429 until until (for every room when global): the
	// room's next messages wait for it, and the reply, due then in the
	// outbox, goes at that time.
	ReplyLimited(room string, until time.Time, global bool)
}

// ErrPaced is in the chain of a reply held back by the ReplyPacer: not a
// failure, the platform was not asked.
var ErrPaced = errors.New("held back to keep to the platform's limits")

// RateLimitedError is a platform's "too many requests": try again after
// RetryAfter. Global says the limit is the bot's across all rooms (a
// Discord global rate limit), not the room's alone.
type RateLimitedError struct {
	RetryAfter time.Duration
	// Until, when set, is when the limit ends on the runtime's clock
	// (RetryAfter from when it was said): a ReplyPacer's hold, which the
	// outbox is woken for at that very time.
	Until  time.Time
	Global bool
	Err    error
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("rate limited; retry after %s: %v", e.RetryAfter, e.Err)
}

func (e *RateLimitedError) Unwrap() error { return e.Err }

// UndeliverableError is a platform's answer to a send that no retry can
// change: the room is gone, or the bot may not post in it. The
// notification service gives up on the notification (a dead letter)
// instead of retrying it.
type UndeliverableError struct{ Err error }

func (e *UndeliverableError) Error() string { return "undeliverable: " + e.Err.Error() }
func (e *UndeliverableError) Unwrap() error { return e.Err }

// MessageGoneError is a platform's answer to an edit of a message that is
// not there to edit any more (deleted, or no longer the bot's to edit).
// The notification service posts the card again as a new message.
type MessageGoneError struct{ Err error }

func (e *MessageGoneError) Error() string { return "message gone: " + e.Err.Error() }
func (e *MessageGoneError) Unwrap() error { return e.Err }

// Message is one incoming chat message, as a platform adapter normalises it.
type Message struct {
	ID          string // the platform's message ID; "" when it has none
	Platform    string // "discord", "slack", "console", "api"
	Room        string // "discord:123", "slack:C42:1712345678.000100", "console"
	WorkspaceID string // Discord guild, Slack team, or "local"
	AuthorID    string
	AuthorName  string
	Text        string // with the bot's own mention removed
	DM          bool   // a direct message to the bot
	Mentioned   bool   // the bot was mentioned
	ReplyToBot  bool   // a reply to one of the bot's messages
	ReplyToID   string // the message replied to, if any
	Command     bool   // a slash command
	Admin       bool   // the platform says the author administers the workspace
	Time        time.Time
	// Action, when set, is a command the platform has already parsed into
	// an action's parameters (Params), as a slash command's options are:
	// the pipeline runs it as given instead of reading Text, which still
	// says the command in words for the memory and the logs.
	Action string
	Params json.RawMessage
	// MemoryID is the ID the pipeline stored the message under (0 before
	// it is stored, or without a store): recall leaves it, and what came
	// after it, out (docs/memory.md).
	MemoryID int64
}

// Addressed reports whether the message is meant for the bot: DMs,
// mentions, replies to the bot and slash commands are; other chatter is not.
func (m *Message) Addressed() bool { return m.DM || m.Mentioned || m.ReplyToBot || m.Command }

// Response is what the bot says back to a message.
type Response struct {
	Text string
	// Ephemeral replies are shown only to the author, where the platform
	// can (slash commands); refusals use it.
	Ephemeral bool
	// TaskNumber names the task the reply is about, so a platform can add
	// controls (Pause / Resume / Cancel buttons).
	TaskNumber int64
	// Key, set by the runtime on the reply to a message, names this reply
	// on every attempt at it: a platform that can (a Discord nonce, Slack
	// metadata) tags it, so that the outbox's retry of a send that failed
	// after all recognises it instead of posting it twice. Replies
	// without a key are sent untagged.
	Key string
}

// ReplyFunc delivers a response where the message came from.
type ReplyFunc func(ctx context.Context, r Response) error

// ActionInfo describes an action to people (help) and to models (tools).
type ActionInfo struct {
	Name        string
	Similes     []string
	Description string
	Examples    []string
	// Parameters is a JSON Schema object; the same schema types the chat
	// command's parameters and the agent tool's arguments.
	Parameters json.RawMessage
	// Tool offers the action to agent tasks. Chat-only commands leave it
	// false.
	Tool bool
	// TaskOnly says the action works only for a task: a tool that
	// refuses a call from chat (the task's files, http_get,
	// post_message, ask_user…). The chat model is not offered it: free
	// text picks among what chat can do.
	TaskOnly bool
	// NeedsRoom says the tool works only for a task with a chat room
	// (it posts there): a task without one is not offered it.
	NeedsRoom bool
	// Decision marks a person's decision: an action that gives authority
	// or destroys work (approve, deny, cancel, unschedule, forget me).
	// It runs only from what a person did — a command of the fixed
	// grammar they typed, a button, a slash command — never from a
	// model's pick: the pipeline does not offer it to the chat model and
	// refuses a pick of it, and no task is offered it as a tool
	// (docs/security.md).
	Decision bool
}

// OffersTo reports whether the action is a tool task may use. A person's
// decision never is, whatever Tool says.
func (i ActionInfo) OffersTo(task domain.Task) bool {
	return i.Tool && !i.Decision && (!i.NeedsRoom || task.RoomID != "")
}

// Action is something the bot can do: a chat command handler and a tool an
// agent task can call.
type Action interface {
	Info() ActionInfo
	Handle(ctx context.Context, call *Call) (Result, error)
}

// ActionValidator is implemented by actions that are available only in
// some situations; an error says why not, as a sentence for the user.
type ActionValidator interface {
	Validate(ctx context.Context, call *Call) error
}

// CommandMatcher is implemented by actions with a deterministic chat
// grammar ("status #1"). The runtime asks matchers, in registration order,
// before any model is consulted. Most look only at msg.Text; some also at
// how the message was sent (a reply to the bot, say).
type CommandMatcher interface {
	MatchCommand(msg *Message) (params json.RawMessage, ok bool)
}

// Call is one invocation of an action.
type Call struct {
	Runtime *Runtime
	// Message is the chat message that asked for the action; nil when a
	// task calls it as a tool.
	Message *Message
	// Task is the task calling the action as a tool; nil for chat.
	Task *domain.Task
	// Files are the calling task's files as its iteration sees them:
	// reads go through to the store, writes wait for the iteration's
	// commit. Nil outside a task's iteration.
	Files  domain.Files
	Params json.RawMessage
	State  *State
}

// Result is what an action returns.
type Result struct {
	Success bool
	Text    string
	Values  map[string]any
	Data    map[string]any
	// Error is a sentence for the user when Success is false.
	Error string
	// Ephemeral asks the platform to show the reply to the author only.
	Ephemeral bool
	// TaskNumber names the task the result is about.
	TaskNumber int64
	// Wait, for a tool a task called, parks the task in waiting with this
	// reason (a question asked, subtasks started) until it is answered.
	Wait domain.WaitOn
	// Notifications, for a tool a task called, are outbox rows (a post, a
	// question) written in the same transaction as the iteration's result:
	// a result rejected for a lost lease posts nothing.
	Notifications []domain.Notification
	// Subtasks, for a tool a task called, are children to create in the
	// same transaction as the iteration's result (Outcome.Subtasks): a
	// result rejected for a lost lease creates none, so a re-run
	// iteration cannot make a second child. Their numbers are known only
	// then; the store notes them on the step's result.
	Subtasks []domain.NewTask
}

// ProviderInfo describes a provider.
type ProviderInfo struct {
	Name        string
	Description string
	// Position orders providers' output in the composed state, lowest
	// first.
	Position int
	// Dynamic providers run only when asked for by name.
	Dynamic bool
	// Private providers run only when asked for by name and are never
	// listed to a model.
	Private bool
}

// Provider contributes to the state a model call is composed from.
type Provider interface {
	Info() ProviderInfo
	Get(ctx context.Context, msg *Message, state *State) (ProviderResult, error)
}

// ProviderResult is one provider's contribution.
type ProviderResult struct {
	Text   string
	Values map[string]any
	Data   map[string]any
}

// EvaluatorInfo describes an evaluator.
type EvaluatorInfo struct {
	Name        string
	Description string
	// AlwaysRun evaluators run on every message the runtime sees, even
	// those it did not answer.
	AlwaysRun bool
	Examples  []string
}

// Evaluator runs after a message has been handled.
type Evaluator interface {
	Info() EvaluatorInfo
	Evaluate(ctx context.Context, ev *Evaluation) error
}

// EvaluatorValidator is implemented by evaluators that run only when
// Validate says so.
type EvaluatorValidator interface {
	Validate(ctx context.Context, ev *Evaluation) bool
}

// Evaluation is what an evaluator sees.
type Evaluation struct {
	Runtime   *Runtime
	Message   *Message
	State     *State
	Responded bool
	Responses []Response
	Results   []ActionOutcome
	// Reply answers the message, for an evaluator that acts on it.
	Reply ReplyFunc
}

// ActionOutcome is one action the pipeline ran.
type ActionOutcome struct {
	Action string
	Result Result
	Err    error
}

// Service is a long-lived component.
type Service interface {
	Name() string
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Route is an HTTP handler a plugin mounts under /plugins/<name>/.
type Route struct {
	Method  string // "" for any
	Path    string // relative, e.g. "stats"
	Handler http.Handler
}

// EventType names a runtime event.
type EventType string

// The runtime events of docs/architecture.md.
const (
	MessageReceived EventType = "MESSAGE_RECEIVED"
	ActionStarted   EventType = "ACTION_STARTED"
	ActionCompleted EventType = "ACTION_COMPLETED"
	RunStarted      EventType = "RUN_STARTED"
	RunEnded        EventType = "RUN_ENDED"
	TaskCreated     EventType = "TASK_CREATED"
	TaskChanged     EventType = "TASK_CHANGED"
	TaskEnded       EventType = "TASK_ENDED"
	// ReplyQueued: a reply whose direct send failed is in the outbox
	// (domain.NotifyReply), to be sent at once.
	ReplyQueued EventType = "REPLY_QUEUED"
)

// Event is what the runtime tells subscribers.
type Event struct {
	Type    EventType
	RunID   string
	Message *Message
	Action  string
	Result  *Result
	Err     error
	Task    *domain.Task
	Time    time.Time
	// Quiet, on a TaskChanged, says the change enqueued no notification
	// to send at once (domain.Notification.Urgent): a claim, an iteration
	// that posted nothing. The notification service then does not look
	// for one.
	Quiet bool
}

// EventHandler receives events. It runs synchronously in the emitter's
// goroutine and must not block for long.
type EventHandler func(ctx context.Context, ev Event)
