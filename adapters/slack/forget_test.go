package slack_test

import (
	"strings"
	"testing"

	"github.com/taskloom/taskloom/domain"
)

// TestForgottenMessageRetriedIsNotStored: Slack retries an event it thinks
// was not received (X-Slack-Retry-Num over HTTP, a new envelope over
// Socket Mode). A person who said `forget me` wants what they said gone:
// a retry of one of their messages arriving after that is neither stored
// again nor answered again, and the bot's reply quoting them went with it.
func TestForgottenMessageRetriedIsNotStored(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, e *env) {
		st := e.core.Runtime.Store()
		e.model.Reply(`{"action": "none", "params": {}, "reply": "You said: my locker code is CORMORANT-77"}`)
		secret := e.fake.DirectMessage(alice, "my locker code is CORMORANT-77")
		first := e.deliver(secret)
		e.waitMessages(1, saying("You said"))
		e.settle()
		stored := search(t, e, "CORMORANT")
		if len(stored) != 2 || stored[0].InReplyTo+stored[1].InReplyTo != min(stored[0].ID, stored[1].ID) {
			t.Fatalf("before forget me, stored %+v; want her message and the reply to it", stored)
		}

		e.deliver(e.fake.DirectMessage(alice, "forget me"))
		e.waitMessages(1, saying("Forgotten"))
		e.settle()
		if got := search(t, e, "CORMORANT"); len(got) != 0 {
			t.Fatalf("after forget me, still stored: %+v", got)
		}

		e.redeliver(secret, first)
		e.settle()
		if got := search(t, e, "CORMORANT"); len(got) != 0 {
			t.Errorf("Slack's retry of her forgotten message was stored again: %+v", got)
		}
		if n := len(e.model.Requests()); n != 1 {
			t.Errorf("the model was asked %d times; the retry must not reach it again", n)
		}
		if got := e.fake.Messages(); len(got) != 2 {
			t.Errorf("%d messages, want the reply and the forget answer only:\n%s", len(got), dump(got))
		}
		all, err := st.SearchMemories(e.ctx, domain.MemoryFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range all {
			if strings.Contains(m.Text, "CORMORANT") || m.AuthorID == alice {
				t.Errorf("left after forget me: %+v", m)
			}
		}
	})
}

func search(t *testing.T, e *env, q string) []domain.Memory {
	t.Helper()
	got, err := e.core.Runtime.Store().SearchMemories(e.ctx, domain.MemoryFilter{Query: q})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
