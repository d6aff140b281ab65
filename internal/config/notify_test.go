package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/internal/config"
)

// TestNotifyStyle: TASKLOOM_NOTIFY_STYLE is batch unless set to card;
// another value is refused in one line naming the variable.
func TestNotifyStyle(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ value, want string }{
		{"", config.NotifyBatch}, {"batch", config.NotifyBatch}, {"card", config.NotifyCard}, {" Card ", config.NotifyCard},
	} {
		c, err := config.Load(env("TASKLOOM_NOTIFY_STYLE", tt.value))
		if err != nil || c.NotifyStyle != tt.want {
			t.Errorf("TASKLOOM_NOTIFY_STYLE=%q: %q, %v; want %q", tt.value, c.NotifyStyle, err, tt.want)
		}
	}
	_, err := config.Load(env("TASKLOOM_NOTIFY_STYLE", "cards"))
	var ce *config.Error
	if !errors.As(err, &ce) || err.Error() != `TASKLOOM_NOTIFY_STYLE="cards": want batch or card` || strings.Contains(err.Error(), "\n") {
		t.Errorf("TASKLOOM_NOTIFY_STYLE=cards: %v", err)
	}
}
