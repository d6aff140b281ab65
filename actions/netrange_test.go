package actions

import (
	"net/netip"
	"strings"
	"testing"
)

// registry is written out here from the IANA IPv4 and IPv6 Special-Purpose
// Address Registries, not derived from specialRanges, so a block dropped
// from the table fails this test.
var registry = []string{
	// IPv4 Special-Purpose Address Registry.
	"0.0.0.0/8", "0.0.0.0/32", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8",
	"169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24", "192.0.0.0/29",
	"192.0.0.8/32", "192.0.0.9/32", "192.0.0.10/32", "192.0.0.170/32",
	"192.0.0.171/32", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24",
	"192.88.99.0/24", "192.168.0.0/16", "192.175.48.0/24", "198.18.0.0/15",
	"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "255.255.255.255/32",
	// IPv4 multicast (Address Space Registry).
	"224.0.0.0/4",
	// IPv6 Special-Purpose Address Registry.
	"::1/128", "::/128", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48",
	"100::/64", "100:0:0:1::/64", "2001::/23", "2001::/32", "2001:1::1/128",
	"2001:1::2/128", "2001:1::3/128", "2001:2::/48", "2001:3::/32",
	"2001:4:112::/48", "2001:10::/28", "2001:20::/28", "2001:30::/28",
	"2001:db8::/32", "2002::/16", "2620:4f:8000::/48", "3fff::/20",
	"5f00::/16", "fc00::/7", "fe80::/10",
	// IPv6 multicast, deprecated site-local, and what is not 2000::/3.
	"ff00::/8", "fec0::/10", "::/3", "4000::/2", "8000::/1",
}

// last is the highest address of p.
func last(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func TestSpecialPurposeCoversTheRegistries(t *testing.T) {
	t.Parallel()
	for _, s := range registry {
		p := netip.MustParsePrefix(s)
		for _, ip := range []netip.Addr{p.Addr(), last(p)} {
			if _, special := specialPurpose(ip); !special {
				t.Errorf("%s (in %s) is treated as public", ip, p)
			}
		}
	}
}

func TestSpecialPurposeLetsPublicAddressesThrough(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"1.1.1.1", "8.8.8.8", "93.184.215.14",
		// Neighbours of special blocks.
		"9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0",
		"126.255.255.255", "128.0.0.0", "172.15.255.255", "172.32.0.0",
		"192.0.1.0", "192.0.3.0", "192.88.98.255", "192.167.255.255",
		"192.169.0.0", "198.17.255.255", "198.20.0.0", "223.255.255.255",
		"::ffff:8.8.8.8",
		"2606:4700:4700::1111", "2001:4860:4860::8888", "2a00:1450:4001::1",
		"2001:200::1", "2003::1", "3ffe:ffff::1",
	} {
		ip := netip.MustParseAddr(s)
		if r, special := specialPurpose(ip); special {
			t.Errorf("%s is refused as %s (%s)", ip, r.Prefix, r.Name)
		}
	}
}

func TestSpecialPurposeNamesTheMostSpecificBlock(t *testing.T) {
	t.Parallel()
	cases := []struct{ addr, want string }{
		{"127.0.0.1", "Loopback"},
		{"::ffff:127.0.0.1", "Loopback"}, // unmapped first
		{"::ffff:10.1.2.3", "Private-Use"},
		{"::ffff:0.0.0.0", `"This host on this network"`},
		{"0.1.2.3", `"This network"`},
		{"192.0.0.9", "Port Control Protocol"},
		{"192.0.0.77", "IETF Protocol Assignments"},
		{"64:ff9b::7f00:1", "NAT64"},
		{"64:ff9b:1::a00:1", "local-use NAT64"},
		{"2001::1", "TEREDO"},
		{"2001:1::1", "Port Control Protocol"},
		{"2002:7f00:1::1", "6to4"},
		{"::1", "Loopback Address"},
		{"::", "Unspecified"},
		{"::7f00:1", "not global unicast"},
		{"fe80::1%eth0", "Link-Local"}, // a zone does not hide it
		{"fd00::1", "Unique-Local"},
		{"ff02::1", "Multicast"},
		{"239.255.255.250", "Multicast"},
	}
	for _, c := range cases {
		r, special := specialPurpose(netip.MustParseAddr(c.addr))
		if !special || !strings.Contains(r.Name, c.want) {
			t.Errorf("%s: got %v %q, want a block named %q", c.addr, special, r.Name, c.want)
		}
	}
	if _, special := specialPurpose(netip.Addr{}); !special {
		t.Error("the zero Addr is treated as public")
	}
}
