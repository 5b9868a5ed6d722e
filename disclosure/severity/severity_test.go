package severity

import "testing"

func TestRankOrdersMostSevereHighest(t *testing.T) {
	order := []string{Critical, High, Medium, Low, Info, "bogus"}
	for i := 1; i < len(order); i++ {
		if Rank(order[i-1]) <= Rank(order[i]) {
			t.Fatalf("%s does not rank above %s", order[i-1], order[i])
		}
	}
	if Rank("bogus") != -1 {
		t.Fatal("an unknown severity must rank -1")
	}
}
