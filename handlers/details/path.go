package details

import (
	"net/url"
	"strconv"
)

// Route is where the page is mounted.
const Route = "/details/"

// Path is the page of a pull request's latest review, or of one reviewed head when head is set.
func Path(owner, repo string, number int, head string) string {
	p := Route + url.PathEscape(owner) + "/" + url.PathEscape(repo) + "/" + strconv.Itoa(number)
	if head != "" {
		p += "/" + url.PathEscape(head)
	}
	return p
}
