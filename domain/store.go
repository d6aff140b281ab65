package domain

import (
	"context"
	"encoding/json"
	"time"
)

// Store keeps tasks, their steps, events and files, chat memories and the
// notification outbox. adapters/postgres and adapters/sqlite implement it and
// both pass the suite in adapters/storetest.
//
// Every write of a task goes through CreateTask, ClaimTask or UpdateTask,
// each one transaction that writes the row and its event together (and
// with UpdateTask the files a Mutation carries). Times are passed in, never
// read from the wall clock, so tests control them.
type Store interface {
	// Migrate applies the embedded migrations not yet applied. It is safe
	// to call from several processes at once.
	Migrate(ctx context.Context) error
	Ping(ctx context.Context) error
	// Now is the store's clock: the database server's, which every
	// replica shares, so claims and leases measured on it agree whatever
	// each replica's own clock says (docs/security.md).
	Now(ctx context.Context) (time.Time, error)
	Close() error

	// CreateTask validates in, numbers the task (numbers are never reused)
	// and writes it with its "created" event. A task that continues
	// another (in.ContinuesNumber) starts with a copy of that task's files,
	// made in the same transaction, so no worker can claim it before they
	// are there.
	CreateTask(ctx context.Context, in NewTask) (Task, error)
	GetTask(ctx context.Context, number int64) (Task, error)
	ListTasks(ctx context.Context, f TaskFilter) ([]Task, error)
	// CountTasks counts the tasks that match f (ignoring its limit).
	CountTasks(ctx context.Context, f TaskFilter) (int, error)

	// ClaimTask hands out the next task of the fair queue — status queued or
	// running, lease free or expired, oldest last_processed_at first (never
	// processed first), then lowest number — with a lease until
	// c.Now+c.Lease and a new fence token, in one statement. ErrNoTask when
	// none is ready.
	ClaimTask(ctx context.Context, c Claim) (Task, error)

	// UpdateTask locks the task, calls fn with its current row and writes
	// what fn returns (row, event, step, notifications) in one transaction.
	// fn's error is returned as is and nothing is written. A store may try
	// fn first on the row it last claimed, writing the result only if the
	// row is still current, so fn may be called more than once: it must
	// depend on its row alone.
	UpdateTask(ctx context.Context, number int64, fn MutateFunc) (Task, error)
	// MoveTask moves a task that has not ended to room (Moved), and with
	// it the notifications still waiting for its old room that no send has
	// begun on, in one transaction: they are delivered in the new room.
	// A Discord task moves into the thread started for it this way.
	MoveTask(ctx context.Context, number int64, room, actor string, now time.Time) (Task, error)

	Steps(ctx context.Context, number int64) ([]Step, error)
	// RecentSteps lists a task's last k steps (k > 0), oldest first: a
	// read bounded by k however many steps the task has (docs/PERFORMANCE.md).
	RecentSteps(ctx context.Context, number int64, k int) ([]Step, error)
	// PageSteps reads a page of a task's steps and counts them all: a
	// read bounded by q however many steps the task has and however long
	// their results are, for whatever shows a task (a notification, the
	// API, status).
	PageSteps(ctx context.Context, number int64, q StepQuery) (StepPage, error)
	// Step reads the step of one iteration of a task; ErrNotFound when it
	// has none.
	Step(ctx context.Context, number int64, iteration int) (Step, error)
	// EventsAt lists the task's events with the given sequences, in
	// sequence order; a sequence it has no event for is left out.
	EventsAt(ctx context.Context, number int64, sequences []int64) ([]TaskEvent, error)
	// TaskEvents lists one task's events with sequence > after.
	TaskEvents(ctx context.Context, number int64, after int64) ([]TaskEvent, error)
	// EventsSince lists every task's events with ID > after, oldest first,
	// at most limit of them.
	EventsSince(ctx context.Context, after int64, limit int) ([]TaskEvent, error)

	// SaveMemory stores a chat message. A message already stored (same
	// platform and message ID — a redelivery) is not stored again: it
	// returns the stored one and false. Nor is a message forgotten
	// (MemoryStore.Forget) redelivered, or a reply (InReplyTo) to a
	// message no longer stored: it returns a zero Memory and false.
	SaveMemory(ctx context.Context, m Memory) (Memory, bool, error)
	// RecentMemories lists a room's latest messages, oldest first.
	RecentMemories(ctx context.Context, room string, limit int) ([]Memory, error)
	// PruneMemories deletes the memories created before before (and those
	// with no time) and says how many it deleted: the retention of
	// docs/security.md. Task events are kept: they are the audit log.
	PruneMemories(ctx context.Context, before time.Time) (int64, error)

	Outbox
	FileStore
	TaskCards
	StepCalls
	ScheduleStore
	MemoryStore
}

// StepQuery asks PageSteps for part of a task's steps.
type StepQuery struct {
	// Limit is how many steps to read at most: the latest ones (of those
	// before Before, when it is set). 0 reads none: only the count.
	Limit int
	// Before pages back: when above 0, only the steps of iterations below
	// it are read, and those of iteration Before whose Call is below
	// BeforeCall (an iteration may have several steps, plugin/toolsteps.go).
	Before, BeforeCall int
	// ResultRunes is how much of each step's result to read: its first
	// ResultRunes characters (0 reads none of it). Step.ResultBytes says
	// how long the whole result is.
	ResultRunes int
}

// StepPage is part of a task's steps.
type StepPage struct {
	// Total counts every step of the task.
	Total int
	// Steps are the steps read, oldest first.
	Steps []Step
}

// NextClaimer is a Store that can commit a worker's iteration and claim
// the worker's next task in one transaction: one commit an iteration
// instead of two (docs/PERFORMANCE.md). Workers that serve one task after another
// use it. It claims what ClaimTask would claim at the start of the
// transaction — the head of the queue, where the task the worker commits
// is not, as the worker holds it — so the only task ready is claimed with
// ClaimTask, after the commit.
type NextClaimer interface {
	// UpdateTaskAndClaim is ClaimTask(next) and UpdateTask(number, fn),
	// committed together where the store can, else one after the other.
	// The claim made before the commit never takes task number, even
	// when its lease has run out: the fence decides whether a late commit
	// is taken, not the clock. One nobody contested (the task's fence and
	// owner still the worker's) is taken; one made after another worker
	// claimed the task is refused with ErrStaleFence, and nothing is
	// claimed.
	// fn's error and UpdateTask's are returned as UpdateTask returns
	// them, and then nothing is claimed. When no other task is ready,
	// claimed is the zero Task and err is nil. If the update committed
	// and a claim made after it failed, after is the task written and err
	// the claim's error.
	UpdateTaskAndClaim(ctx context.Context, number int64, fn MutateFunc, next Claim) (after, claimed Task, err error)
}

// FileStore keeps the files of tasks (docs/deploy.md). An iteration's changes
// reach it only through UpdateTask (Mutation.Files), in the iteration's
// fenced commit, within the limits of MaxFileBytes, MaxTaskFileBytes and
// MaxTaskFiles; a change past one is refused with ErrLimit and nothing of
// the mutation is written.
type FileStore interface {
	FileReader
	// ImportTaskFiles adds to task number each of files (writes; paths as
	// CleanFilePath makes them) at whose path it has no file yet, while the
	// limits allow, updated at now, and returns the paths it wrote. It is
	// how workspaces of an earlier version, kept on disk, move into the
	// store: running it again adds nothing. ErrNotFound when there is no
	// such task.
	ImportTaskFiles(ctx context.Context, number int64, files []FileChange, now time.Time) ([]string, error)
}

// TaskOrder says how ListTasks sorts.
type TaskOrder int

const (
	// OrderNumber sorts by task number, ascending.
	OrderNumber TaskOrder = iota
	// OrderQueue sorts the way the queue serves: never-processed first,
	// then oldest last_processed_at, then number.
	OrderQueue
	// OrderRecent sorts by number, newest first.
	OrderRecent
)

// TaskFilter selects tasks. Zero fields select everything.
type TaskFilter struct {
	Statuses    []Status
	WorkspaceID string
	RequestorID string
	RoomID      string
	// Query matches name or goal, case-insensitively, as a substring.
	Query        string
	ParentNumber int64
	// LeaseOwner keeps the tasks whose lease column names this owner,
	// held or run out: what a worker may hold without knowing it, when
	// the answer to its claim was lost with its connection.
	LeaseOwner string
	// AfterNumber pages: only tasks numbered above it (with OrderNumber)
	// or below it (with OrderRecent).
	AfterNumber int64
	Order       TaskOrder
	Limit       int
}

// Memory is one chat message the runtime has seen, the bot's own replies
// included.
type Memory struct {
	ID          int64     `json:"id"`
	Platform    string    `json:"platform"`
	MessageID   string    `json:"message_id"`
	Room        string    `json:"room"`
	WorkspaceID string    `json:"workspace_id"`
	AuthorID    string    `json:"author_id"`
	AuthorName  string    `json:"author_name"`
	Text        string    `json:"text"`
	FromBot     bool      `json:"from_bot"`
	CreatedAt   time.Time `json:"created_at"`
	// InReplyTo is, for a reply of the bot, the ID of the memory it
	// answers (0 for none): forgetting that message's author deletes the
	// reply with it, as it may quote them.
	InReplyTo int64 `json:"in_reply_to,omitempty"`
}

// Notification categories (docs/chat.md).
const (
	NotifyProgress = "progress" // latest wins
	NotifyAction   = "action"   // latest wins
	NotifyError    = "error"    // accumulate
	NotifyTerminal = "terminal" // sent at once
	NotifyMessage  = "message"  // a task's post_message or question: sent at once
	// NotifyReply is the bot's reply to a person whose direct send failed
	// (ReplyPayload): sent at once, alone in its message, under the key
	// of the failed attempt.
	NotifyReply = "reply"
)

// Urgent reports whether n is sent at once rather than with the next
// batch: a task's end, a message (a post, a question, an approval
// request), or a reply to a person.
func (n Notification) Urgent() bool {
	return n.Category == NotifyTerminal || n.Category == NotifyMessage || n.Category == NotifyReply
}

// ReplyPayload is a NotifyReply's payload: the reply as the pipeline
// made it, the platform message it answers (ReplyTo, "" for a command or
// a button, which answer no message), and the delivery key and time of
// the direct attempt that failed, so that the outbox's first attempt can
// recognise what that one delivered (a Discord nonce, Slack metadata).
type ReplyPayload struct {
	Text    string    `json:"text"`
	ReplyTo string    `json:"reply_to,omitempty"`
	Key     string    `json:"key,omitempty"`
	At      time.Time `json:"at,omitzero"`
}

// Notification statuses (docs/security.md).
const (
	// NotificationPending is waiting to be delivered, or being delivered.
	NotificationPending = "pending"
	// NotificationFailed is a dead letter: it could not be delivered (the
	// channel is gone or forbidden, or 24 hours of failures) and is kept,
	// with the reason, until someone retries it.
	NotificationFailed = "failed"
)

// Notification is one pending update for a room, kept in the outbox until
// the platform has accepted the message that carries it.
type Notification struct {
	ID         int64           `json:"id"`
	Room       string          `json:"room"`
	TaskNumber int64           `json:"task_number"`
	Category   string          `json:"category"`
	Payload    json.RawMessage `json:"payload"`
	CreatedAt  time.Time       `json:"created_at"`
	// Attempts counts failed deliveries; NextAttemptAt is when the next may
	// be made.
	Attempts      int       `json:"attempts"`
	NextAttemptAt time.Time `json:"next_attempt_at"`
	LastError     string    `json:"last_error,omitempty"`
	// Status is NotificationPending, or NotificationFailed since FailedAt
	// with LastError saying why. RetriedAt is when it was last sent back
	// from failed to pending (RetryNotification); its failures are counted
	// from then.
	Status    string    `json:"status"`
	FailedAt  time.Time `json:"failed_at,omitzero"`
	RetriedAt time.Time `json:"retried_at,omitzero"`
	// DeliveryKey names the message that carries this notification from
	// the moment a send of it began (BeginSend), and SendingAt is when the
	// first such send began. Every later attempt, by any sender, sends the
	// same message under the same key, so the platform can recognise what
	// an earlier attempt delivered (a Discord nonce, Slack metadata).
	// Enqueue ignores these fields and Status.
	DeliveryKey string    `json:"delivery_key,omitempty"`
	SendingAt   time.Time `json:"sending_at,omitzero"`
	// Rendered is the message the first send under DeliveryKey rendered,
	// as the notification service encodes it, on one row of the message
	// (BeginSend); empty on the others and before any send.
	Rendered string `json:"-"`
	// Asks is what the notification asks people for (a question's
	// answer, an approval), set by the tool that made it and not stored:
	// an iteration that ends its task drops such a request, as nobody
	// can answer it any more.
	Asks WaitOn `json:"-"`
}

// RoomClaim asks for the due notifications of one room.
type RoomClaim struct {
	Owner string
	Now   time.Time
	Lease time.Duration
	// StoreClock measures the claim on the store's clock instead of Now.
	StoreClock bool
	// Room, when set, claims that room; otherwise the due room whose
	// oldest pending notification is oldest.
	Room string
	// Categories, when set, claim the room only if it has a due
	// notification of one of them (terminal ones go out at once).
	Categories []string
	// SkipPlatforms are platforms (the room's prefix, RoomPlatform) whose
	// rooms are not claimed: the sender cannot send to them now, as when
	// a platform's rate limit holds every room.
	SkipPlatforms []string
	// Limit is the most rows one claim takes: RoomClaimRows when 0.
	Limit int
}

// RoomClaimRows is how many notifications one room claim takes at most:
// a message's worth. A backlog (after an outage) goes out in several
// messages, one flush after another, rather than in one huge message.
const RoomClaimRows = 50

// Outbox is the durable queue of notifications. A room's pending rows are
// claimed together by one sender at a time, marked sent only after the
// platform accepted them, and otherwise released for a later attempt.
type Outbox interface {
	Enqueue(ctx context.Context, n Notification) (Notification, error)
	// ClaimRoom claims due, unclaimed notifications of one room (see
	// RoomClaim): when a send began on some of them, the rows of the
	// oldest such message, whole (they carry its delivery key, and it is
	// sent again exactly); otherwise at most c.Limit rows, terminal rows
	// and task posts first (they go out at once, whatever backlog the
	// room has), then the rest, each oldest first. What is left waits for
	// the next claim. It returns the room and its rows by ID, or "" and
	// none when nothing is due.
	ClaimRoom(ctx context.Context, c RoomClaim) (string, []Notification, error)
	// MarkSent deletes the claimed rows once delivered and records, per
	// task, the progress last sent to the room.
	MarkSent(ctx context.Context, owner string, ids []int64, sent []RoomProgress) error
	// Release gives claimed rows back, to be retried at retryAt.
	Release(ctx context.Context, owner string, ids []int64, retryAt time.Time, reason string) error
	// GiveBack gives claimed rows back unsent, due at due, counting no
	// attempt: a send held back by the platform's rate limits, or by a
	// shutdown, did not fail.
	GiveBack(ctx context.Context, owner string, ids []int64, due time.Time) error
	// SettleQueued settles row id, queued ahead of a send made outside
	// the outbox (a reply sent directly, due only once that send could no
	// longer be running): sent deletes it; otherwise it becomes due at
	// due. ErrNotFound when the row is gone, claimed or being sent — a
	// sender took it, and sends it under its key.
	SettleQueued(ctx context.Context, id int64, sent bool, due time.Time) error
	// RenewClaim extends owner's claim on the rows of ids to until, while
	// their message is being sent. ErrStaleFence when one of them is no
	// longer owner's (its claim expired and another sender took it), and
	// then nothing is extended.
	RenewClaim(ctx context.Context, owner string, ids []int64, until time.Time) error
	// BeginSend records on owner's claimed rows that a send of their
	// message, named key, begins at now: DeliveryKey becomes key and
	// SendingAt, if unset, now. rendered is the message as this attempt
	// made it; it is kept on one of the rows (Rendered) unless one of
	// them has an earlier attempt's already, so that every attempt sends
	// the first one's bytes. ErrStaleFence when one of them is no longer
	// owner's, and then nothing is recorded.
	BeginSend(ctx context.Context, owner string, ids []int64, key string, now time.Time, rendered string) error
	// MarkFailed gives up on owner's claimed rows: they become dead letters
	// (NotificationFailed at now, with reason), never claimed again unless
	// retried. Rows no longer owner's are left alone and reported with
	// ErrStaleFence.
	MarkFailed(ctx context.Context, owner string, ids []int64, now time.Time, reason string) error
	// ListNotifications lists the notifications with status (any status
	// when ""), by ID, those with an ID above after, at most limit of them
	// (all when limit <= 0).
	ListNotifications(ctx context.Context, status string, after int64, limit int) ([]Notification, error)
	// RetryNotification sends a dead letter back to pending, due at now,
	// with its attempts and error cleared, and returns it. ErrNotFound when
	// there is no notification id; ErrInvalidState when it is not failed.
	RetryNotification(ctx context.Context, id int64, now time.Time) (Notification, error)
	// LastSent returns the progress last sent to room for each task asked.
	LastSent(ctx context.Context, room string, tasks []int64) (map[int64]int, error)
	// Pending counts notifications not yet delivered and not given up on
	// (status pending, claimed or not).
	Pending(ctx context.Context) (int, error)
}

// RoomProgress is the progress of one task as last shown in one room.
//
// Recording it never moves the room back: the progress recorded is
// replaced by a higher one, or by a lower one only when the message that
// showed it started from the progress recorded (From): a task whose
// progress went down (a review sending work back) was shown the drop. A
// message rendered against an older record, sent late, changes nothing.
type RoomProgress struct {
	Room       string
	TaskNumber int64
	Progress   int
	// From is the progress the message showing Progress started its delta
	// from: what the room had last seen when it was rendered.
	From int `json:",omitempty"`
}
