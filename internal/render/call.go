package render

// Call shows a tool call a person is asked to approve — its action and
// parameters as the model wrote them — as an inline code span for flavor
// f, all of it: nothing is clipped, and nothing in it can hide the rest
// (see Visible). A call longer than one message goes out in several; the
// platforms put the buttons on the last.
func Call(f Flavor, action, params string) string {
	s := action
	if params != "" {
		s += " " + params
	}
	return code(f, Visible(s))
}
