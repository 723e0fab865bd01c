-- LEAVE: ARGV[5] user. A waiting user abandons; an assigned user's room
-- is freed.
local u = user_load(ARGV[5])
if not u then return finish('OK', false, 0) end
if u.state == 'waiting' then
	user_abandon(u, 'leave')
else
	room_release(servicer_load(u.servicer), u.room, u.id, 'user')
end
return finish('OK', false, 1)
