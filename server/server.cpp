namespace lizard {}
