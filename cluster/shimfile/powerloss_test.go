package shimfile

import (
	"fmt"
	"testing"
)

func TestParseFsyncLog(t *testing.T) {
	log := "F 10 /d/a\n" +
		"F 30 /d/a\n" +
		"F 20 /d/a\n" + // out of order: the larger size stands
		"F 5 /d/tmp\n" +
		"R /d/tmp\t/d/b\n" + // follows the rename
		"T 4 /d/b\n" + // a cut below the durable size
		"F 7 /d/c\n" +
		"U /d/c\n" +
		"R /d/never\t/d/a2\n" +
		"F 9 /d/with space\n" +
		"F 99 /d/to"
	got := ParseFsyncLog([]byte(log))
	want := map[string]int64{"/d/a": 30, "/d/b": 4, "/d/with space": 9}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ParseFsyncLog = %v, want %v", got, want)
	}
}
