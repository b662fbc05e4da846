-- PPCB, the byte-stream transfer protocol of wirelab (notebooks/ppcb-protocol.md), for Wireshark and tshark.
--
--   tshark -X lua_script:ppcb.lua -r run.pcapng -Y ppcb
--   wirelab wireshark install        # copies this file into your personal Lua plugins folder
--
-- Every packet: type u8, session_id 8 bytes, then by type (big-endian, no padding):
--   CONN   1  protocol_id u8, total_length u64           18 B
--   CONACC 2, CONRJT 3, RCVD 7                            9 B
--   DATA   4  packet_no u64, data_len u32, data           21 B + data_len (1..64000)
--   ACC    5, RJT 6  packet_no u64                        17 B
-- Over UDP a datagram is exactly one packet; over TCP packets follow each other on the
-- stream, so TCP segments are reassembled into whole packets (dissect_tcp_pdus).
--
-- Which traffic is PPCB: a heuristic (on by default) recognises a UDP datagram that is
-- exactly one well-formed packet, and a TCP stream whose first bytes are a CONN;
-- the conversation is then PPCB in both directions. Ports can also be given:
--   tshark -o ppcb.udp_ports:5000 -o ppcb.tcp_ports:5001 ...   (or Decode As... in the GUI)

-- Loaded twice (the installed plugin and -X lua_script:)? The first one stays.
local found, loaded = pcall(Dissector.get, "ppcb")
if found and loaded then return end

local ppcb = Proto("ppcb", "PPCB (wirelab byte-stream transfer protocol)")

-- BEGIN wire table: the packet table of wirelab.wire.ppcb (python -m wirelab.wire.ppcb --lua);
-- tests/test_capture_ppcb_dissector.py checks it is the same.
local TYPES = { [1] = "CONN", [2] = "CONACC", [3] = "CONRJT", [4] = "DATA", [5] = "ACC", [6] = "RJT", [7] = "RCVD" }
local CODE = { CONN = 1, CONACC = 2, CONRJT = 3, DATA = 4, ACC = 5, RJT = 6, RCVD = 7 }
-- Header bytes by type (DATA without its data).
local HEADER = { [1] = 18, [2] = 9, [3] = 9, [4] = 21, [5] = 17, [6] = 17, [7] = 9 }
local PROTOCOLS = { [1] = "tcp", [2] = "udp", [3] = "udpr" }
local MAX_DATA = 64000
-- Where each field starts (bytes from the packet's start) and its size.
local AT = { session_id = 1, protocol_id = 9, total_length = 10, packet_no = 9, data_len = 17, data = 21 }
local SIZE = { session_id = 8, protocol_id = 1, total_length = 8, packet_no = 8, data_len = 4 }
-- END wire table

local f = {
    type         = ProtoField.uint8("ppcb.type", "Type", base.DEC, TYPES),
    session_id   = ProtoField.bytes("ppcb.session_id", "Session id"),
    protocol_id  = ProtoField.uint8("ppcb.protocol_id", "Protocol id", base.DEC, PROTOCOLS),
    total_length = ProtoField.uint64("ppcb.total_length", "Total length", base.DEC),
    packet_no    = ProtoField.uint64("ppcb.packet_no", "Packet number", base.DEC),
    data_len     = ProtoField.uint32("ppcb.data_len", "Data length", base.DEC),
    data         = ProtoField.bytes("ppcb.data", "Data"),
}
ppcb.fields = { f.type, f.session_id, f.protocol_id, f.total_length, f.packet_no, f.data_len, f.data }

local malformed = ProtoExpert.new("ppcb.malformed", "Malformed PPCB packet", expert.group.MALFORMED, expert.severity.ERROR)
local refused = ProtoExpert.new("ppcb.refused", "Refused (CONRJT/RJT)", expert.group.RESPONSE_CODE, expert.severity.WARN)
ppcb.experts = { malformed, refused }

ppcb.prefs.heuristic = Pref.bool("Recognise PPCB by its content", true,
    "UDP datagrams that are exactly one PPCB packet, TCP streams that start with a CONN")
ppcb.prefs.udp_ports = Pref.range("UDP ports", "", "UDP ports always decoded as PPCB", 65535)
ppcb.prefs.tcp_ports = Pref.range("TCP ports", "", "TCP ports always decoded as PPCB", 65535)

-- The length of the packet starting at offset, or nil if the type is unknown.
-- For DATA the header must be there to know it (returns 0 then: "need more bytes").
local function packet_length(tvb, offset)
    local available = tvb:len() - offset
    local kind = tvb(offset, 1):uint()
    local header = HEADER[kind]
    if header == nil then return nil end
    if kind ~= CODE.DATA then return header end
    if available < header then return 0 end
    return header + tvb(offset + AT.data_len, SIZE.data_len):uint()
end

local info_frame = nil   -- the frame whose Info column we last wrote (TCP: several packets a frame)

-- One packet (a datagram, or one reassembled from the TCP stream) into the tree.
local function dissect_packet(tvb, pinfo, root, datagram)
    local length = tvb:len()
    local kind = tvb(0, 1):uint()
    local name = TYPES[kind] or ("type " .. kind)
    local tree = root:add(ppcb, tvb(), "PPCB " .. name)
    tree:add(f.type, tvb(0, 1))
    local header = HEADER[kind]
    if header == nil or length < header then
        tree:add_proto_expert_info(malformed, header and ("truncated " .. name) or ("unknown type " .. kind))
        return length
    end
    tree:add(f.session_id, tvb(AT.session_id, SIZE.session_id))
    local info = name
    if kind == CODE.CONN then
        local protocol_id, total_length = tvb(AT.protocol_id, SIZE.protocol_id), tvb(AT.total_length, SIZE.total_length)
        tree:add(f.protocol_id, protocol_id)
        tree:add(f.total_length, total_length)
        info = string.format("CONN %s, %s bytes", PROTOCOLS[protocol_id:uint()] or "?", tostring(total_length:uint64()))
    elseif kind == CODE.DATA or kind == CODE.ACC or kind == CODE.RJT then
        local packet_no = tvb(AT.packet_no, SIZE.packet_no)
        tree:add(f.packet_no, packet_no)
        info = name .. " #" .. tostring(packet_no:uint64())
    end
    if kind == CODE.DATA then
        local data_len = tvb(AT.data_len, SIZE.data_len):uint()
        tree:add(f.data_len, tvb(AT.data_len, SIZE.data_len))
        info = info .. ", " .. data_len .. " B"
        if data_len < 1 or data_len > MAX_DATA then
            tree:add_proto_expert_info(malformed, "data_len " .. data_len .. " outside 1.." .. MAX_DATA)
        end
        if length > header then tree:add(f.data, tvb(header, length - header)) end
        if length ~= header + data_len then
            tree:add_proto_expert_info(malformed, "data_len " .. data_len .. " but " .. (length - header) .. " bytes follow")
        end
    elseif datagram and length ~= header then
        tree:add_proto_expert_info(malformed, name .. " is " .. header .. " bytes, not " .. length)
    end
    if kind == CODE.CONRJT or kind == CODE.RJT then tree:add_proto_expert_info(refused) end
    pinfo.cols.protocol:set("PPCB")
    if pinfo.number ~= info_frame then           -- the first packet of this frame
        pinfo.cols.info:set(tostring(pinfo.src_port) .. " → " .. tostring(pinfo.dst_port) .. " " .. info)
        info_frame = pinfo.number
    else
        pinfo.cols.info:append(", " .. info)
    end
    return length
end

-- TCP: whole packets out of the stream, however the segments cut it.
local function tcp_length(tvb, pinfo, offset)
    local length = packet_length(tvb, offset)
    if length == nil then return tvb:len() - offset end     -- not PPCB: the rest, marked malformed
    if length == 0 and not pinfo.can_desegment then return tvb:len() - offset end
    return length
end

local function tcp_packet(tvb, pinfo, root)
    return dissect_packet(tvb, pinfo, root, false)
end

local function dissect(tvb, pinfo, root)
    if tvb:len() == 0 then return 0 end
    if pinfo.port_type == 2 then                            -- PT_TCP
        return dissect_tcp_pdus(tvb, root, 1, tcp_length, tcp_packet, true)
    end
    return dissect_packet(tvb, pinfo, root, true)
end
ppcb.dissector = dissect

-- Exactly one well-formed packet: what a PPCB datagram is.
local function one_packet(tvb)
    local length = tvb:len()
    if length < AT.session_id + SIZE.session_id then return false end
    local kind = tvb(0, 1):uint()
    local header = HEADER[kind]
    if header == nil or length < header then return false end
    if kind == CODE.CONN and PROTOCOLS[tvb(AT.protocol_id, SIZE.protocol_id):uint()] == nil then return false end
    if kind == CODE.DATA then
        local data_len = tvb(AT.data_len, SIZE.data_len):uint()
        return data_len >= 1 and data_len <= MAX_DATA and length == header + data_len
    end
    return length == header
end

local function heuristic_udp(tvb, pinfo, root)
    if not ppcb.prefs.heuristic or not one_packet(tvb) then return false end
    pinfo.conversation = ppcb
    dissect(tvb, pinfo, root)
    return true
end

-- A TCP stream is PPCB when its first byte starts a CONN (later segments may cut a packet
-- anywhere, so only the stream's start is judged; the conversation follows). Judging only
-- relative sequence number 1 keeps bulk data from matching by chance.
local tcp_seq = Field.new("tcp.seq")
local function heuristic_tcp(tvb, pinfo, root)
    if not ppcb.prefs.heuristic or tvb:len() < HEADER[CODE.CONN] then return false end
    local seq = tcp_seq()
    if seq == nil or tostring(seq.value) ~= "1" then return false end
    if tvb(0, 1):uint() ~= CODE.CONN or PROTOCOLS[tvb(AT.protocol_id, SIZE.protocol_id):uint()] == nil then
        return false
    end
    pinfo.conversation = ppcb
    dissect(tvb, pinfo, root)
    return true
end

ppcb:register_heuristic("udp", heuristic_udp)
ppcb:register_heuristic("tcp", heuristic_tcp)
DissectorTable.get("udp.port"):add_for_decode_as(ppcb)
DissectorTable.get("tcp.port"):add_for_decode_as(ppcb)

local current = { udp = "", tcp = "" }
function ppcb.prefs_changed()
    for _, transport in ipairs({ "udp", "tcp" }) do
        local table = DissectorTable.get(transport .. ".port")
        local wanted = ppcb.prefs[transport .. "_ports"]
        if current[transport] ~= "" then table:remove(current[transport], ppcb) end
        if wanted ~= "" then table:add(wanted, ppcb) end
        current[transport] = wanted
    end
end
