package sqlstore

import (
	"reflect"
	"testing"

	"github.com/taskloom/taskloom/domain"
)

// Every field of a task is a column: a field added to the domain's Task
// without its entry in taskColumns would never be stored, and every
// reader would see it zero.
func TestEveryTaskFieldIsAColumn(t *testing.T) {
	fields := reflect.TypeFor[domain.Task]().NumField()
	if len(taskColumns) != fields {
		t.Errorf("tasks has %d columns and domain.Task %d fields: give each field its entry in taskColumns", len(taskColumns), fields)
	}
	seen := map[string]bool{}
	for _, c := range taskColumns {
		if seen[c.name] {
			t.Errorf("column %s listed twice", c.name)
		}
		seen[c.name] = true
	}
}
