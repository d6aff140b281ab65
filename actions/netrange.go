package actions

import "net/netip"

// specialRange is one block http_get refuses to dial, with the name the
// registry gives it, so a refusal can say what the address is.
type specialRange struct {
	Prefix netip.Prefix
	Name   string
}

// specialRanges is every block of the IANA IPv4 and IPv6 Special-Purpose
// Address Registries (RFC 6890 and the entries registered since; checked
// against the registries as updated in 2024–2025), plus the blocks the
// address-space registries keep out of public unicast: IPv4 multicast and
// every IPv6 address outside 2000::/3. Blocks the registries mark
// "globally reachable" (AS112, AMT, the PCP and TURN anycast addresses,
// 64:ff9b::/96) are refused too: none is a web server, and a translation
// prefix reaches whatever IPv4 address is embedded in it.
//
// IPv4-mapped IPv6 addresses (::ffff:0:0/96) are not listed: they are
// unmapped first, and the IPv4 address inside decides.
var specialRanges = []specialRange{
	// IPv4 Special-Purpose Address Registry.
	{pfx("0.0.0.0/8"), `"This network" (RFC 791)`},
	{pfx("0.0.0.0/32"), `"This host on this network" (RFC 1122)`},
	{pfx("10.0.0.0/8"), "Private-Use (RFC 1918)"},
	{pfx("100.64.0.0/10"), "Shared Address Space (RFC 6598)"},
	{pfx("127.0.0.0/8"), "Loopback (RFC 1122)"},
	{pfx("169.254.0.0/16"), "Link Local (RFC 3927)"},
	{pfx("172.16.0.0/12"), "Private-Use (RFC 1918)"},
	{pfx("192.0.0.0/24"), "IETF Protocol Assignments (RFC 6890)"},
	{pfx("192.0.0.0/29"), "IPv4 Service Continuity Prefix (RFC 7335)"},
	{pfx("192.0.0.8/32"), "IPv4 dummy address (RFC 7600)"},
	{pfx("192.0.0.9/32"), "Port Control Protocol Anycast (RFC 7723)"},
	{pfx("192.0.0.10/32"), "Traversal Using Relays around NAT Anycast (RFC 8155)"},
	{pfx("192.0.0.170/32"), "NAT64/DNS64 Discovery (RFC 7050)"},
	{pfx("192.0.0.171/32"), "NAT64/DNS64 Discovery (RFC 7050)"},
	{pfx("192.0.2.0/24"), "Documentation (TEST-NET-1, RFC 5737)"},
	{pfx("192.31.196.0/24"), "AS112-v4 (RFC 7535)"},
	{pfx("192.52.193.0/24"), "AMT (RFC 7450)"},
	{pfx("192.88.99.0/24"), "Deprecated (6to4 Relay Anycast, RFC 7526)"},
	{pfx("192.168.0.0/16"), "Private-Use (RFC 1918)"},
	{pfx("192.175.48.0/24"), "Direct Delegation AS112 Service (RFC 7534)"},
	{pfx("198.18.0.0/15"), "Benchmarking (RFC 2544)"},
	{pfx("198.51.100.0/24"), "Documentation (TEST-NET-2, RFC 5737)"},
	{pfx("203.0.113.0/24"), "Documentation (TEST-NET-3, RFC 5737)"},
	{pfx("240.0.0.0/4"), "Reserved (RFC 1112)"},
	{pfx("255.255.255.255/32"), "Limited Broadcast (RFC 919)"},
	// IPv4 Address Space Registry.
	{pfx("224.0.0.0/4"), "Multicast (RFC 5771)"},

	// IPv6 Special-Purpose Address Registry.
	{pfx("::1/128"), "Loopback Address (RFC 4291)"},
	{pfx("::/128"), "Unspecified Address (RFC 4291)"},
	{pfx("64:ff9b::/96"), "IPv4-IPv6 Translation (NAT64, RFC 6052)"},
	{pfx("64:ff9b:1::/48"), "IPv4-IPv6 Translation (local-use NAT64, RFC 8215)"},
	{pfx("100::/64"), "Discard-Only Address Block (RFC 6666)"},
	{pfx("100:0:0:1::/64"), "Dummy IPv6 Prefix"},
	{pfx("2001::/23"), "IETF Protocol Assignments (RFC 2928)"},
	{pfx("2001::/32"), "TEREDO (RFC 4380)"},
	{pfx("2001:1::1/128"), "Port Control Protocol Anycast (RFC 7723)"},
	{pfx("2001:1::2/128"), "Traversal Using Relays around NAT Anycast (RFC 8155)"},
	{pfx("2001:1::3/128"), "DNS-SD Service Registration Protocol Anycast (RFC 9665)"},
	{pfx("2001:2::/48"), "Benchmarking (RFC 5180)"},
	{pfx("2001:3::/32"), "AMT (RFC 7450)"},
	{pfx("2001:4:112::/48"), "AS112-v6 (RFC 7535)"},
	{pfx("2001:10::/28"), "Deprecated (previously ORCHID, RFC 4843)"},
	{pfx("2001:20::/28"), "ORCHIDv2 (RFC 7343)"},
	{pfx("2001:30::/28"), "Drone Remote ID Protocol Entity Tags (RFC 9374)"},
	{pfx("2001:db8::/32"), "Documentation (RFC 3849)"},
	{pfx("2002::/16"), "6to4 (RFC 3056)"},
	{pfx("2620:4f:8000::/48"), "Direct Delegation AS112 Service (RFC 7534)"},
	{pfx("3fff::/20"), "Documentation (RFC 9637)"},
	{pfx("5f00::/16"), "Segment Routing (SRv6) SIDs (RFC 9602)"},
	{pfx("fc00::/7"), "Unique-Local (RFC 4193)"},
	{pfx("fe80::/10"), "Link-Local Unicast (RFC 4291)"},
	// IPv6 Address Space Registry: only 2000::/3 is global unicast.
	{pfx("::/3"), "not global unicast (IPv6 Address Space, RFC 4291)"},
	{pfx("4000::/2"), "not global unicast (IPv6 Address Space, RFC 4291)"},
	{pfx("8000::/1"), "not global unicast (IPv6 Address Space, RFC 4291)"},
	{pfx("fec0::/10"), "Site-Local, deprecated (RFC 3879)"},
	{pfx("ff00::/8"), "Multicast (RFC 4291)"},
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// specialPurpose returns the most specific special-purpose block holding
// ip, or false for a public unicast address. The zero Addr is special: it
// is no address at all.
func specialPurpose(ip netip.Addr) (specialRange, bool) {
	if !ip.IsValid() {
		return specialRange{Name: "not an IP address"}, true
	}
	// Prefix.Contains never matches an address with a zone, so a
	// link-local fe80::1%eth0 would otherwise look public.
	ip = ip.WithZone("").Unmap()
	var best specialRange
	found := false
	for _, r := range specialRanges {
		if r.Prefix.Contains(ip) && (!found || r.Prefix.Bits() > best.Prefix.Bits()) {
			best, found = r, true
		}
	}
	return best, found
}
