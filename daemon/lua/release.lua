-- RELEASE: ARGV[5] servicer, [6] room index (the daemon parsed the room).
local s = servicer_load(ARGV[5])
local idx = tonumber(ARGV[6])
if not s or not room_exists(s, idx) then return finish('NOTFOUND', false) end
local uid = redis.call('HGET', rooms_key(s.id), idx)
if not uid then return finish('OK', false, 0) end
room_release(s, idx, uid, 'servicer')
return finish('OK', false, 1)
