package inspect

// RouteCount sums the routed items of one (row, from, to) pair: how many
// reached To, and how many of them a batch of To's skill adopted, rejected
// or has yet to decide on.
type RouteCount struct {
	Row      string `json:"row,omitempty"`
	From     string `json:"from"`
	To       string `json:"to"`
	Items    int    `json:"items"`
	Adopted  int    `json:"adopted"`
	Rejected int    `json:"rejected"`
	Pending  int    `json:"pending"`
}

// CountRoutes sums items by (row, from, to), in the order each pair first
// appears, so a report and the viewer show the same counts.
func CountRoutes(items []RoutedItem) []RouteCount {
	out := []RouteCount{}
	at := map[[3]string]int{}
	for _, it := range items {
		key := [3]string{it.Row, it.From, it.To}
		i, ok := at[key]
		if !ok {
			i = len(out)
			at[key] = i
			out = append(out, RouteCount{Row: it.Row, From: it.From, To: it.To})
		}
		c := &out[i]
		c.Items++
		switch {
		case it.Adopted == nil:
			c.Pending++
		case *it.Adopted:
			c.Adopted++
		default:
			c.Rejected++
		}
	}
	return out
}
