-- Variant: no event log and no retention stamps on tasks (the research's
-- bare queue table, for comparison).
DROP TRIGGER tasks_transition ON tasks;
DROP TRIGGER tasks_finished ON tasks;
