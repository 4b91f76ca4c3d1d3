package schedule_test

import (
	"fmt"
	"time"

	"github.com/skeinflow/skein/schedule"
)

func ExampleParse() {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := schedule.Parse("30 8 * * MON-FRI", paris)
	if err != nil {
		fmt.Println(err)
		return
	}
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, paris) // a Friday
	for range 2 {
		at = e.Next(at)
		fmt.Println(at.Format(time.RFC3339))
	}
	_, err = schedule.Parse("0 25 * * *", nil)
	fmt.Println(err)
	// Output:
	// 2026-11-30T08:30:00+01:00
	// 2026-12-01T08:30:00+01:00
	// schedule: expression "0 25 * * *": hour field: 25 is out of range 0-23
}
