# bash completion for airlock. The commands and each command's options are
# read from airlock's own --help when completing, so they never drift from
# the binary. Installed as share/bash-completion/completions/airlock.
_airlock()
{
  local cur prev cmd i
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD-1]}
  cmd=
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      -*) ;;
      *) cmd=${COMP_WORDS[i]}; break ;;
    esac
  done
  if [[ -z $cmd ]]; then
    COMPREPLY=($(compgen -W "$(airlock --help 2>/dev/null | sed -n '/^commands:/,/^$/s/^  \([a-z]*\) .*/\1/p') --help --version" -- "$cur"))
    return
  fi
  if [[ $cmd == help ]]; then
    COMPREPLY=($(compgen -W "$(airlock --help 2>/dev/null | sed -n '/^commands:/,/^$/s/^  \([a-z]*\) .*/\1/p')" -- "$cur"))
    return
  fi
  case $prev in
    -p|--policy|-c|--config|-r|--record|-o|--output|--log|--relay-log|--seccomp-out|--key-file|--cacert|--socket)
      COMPREPLY=($(compgen -f -- "$cur"))
      return ;;
    --for) COMPREPLY=($(compgen -W "ticket run render" -- "$cur")); return ;;
    --backend) COMPREPLY=($(compgen -W "native docker" -- "$cur")); return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(airlock "$cmd" --help 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)" -- "$cur"))
  else
    case $cmd in
      policy) [[ $COMP_CWORD -eq $((i + 1)) ]] && { COMPREPLY=($(compgen -W "check default init" -- "$cur")); return; } ;;
      render) [[ $COMP_CWORD -eq $((i + 1)) ]] && { COMPREPLY=($(compgen -W "compose kubernetes seccomp" -- "$cur")); return; } ;;
      token) [[ $COMP_CWORD -eq $((i + 1)) ]] && { COMPREPLY=($(compgen -W "lease" -- "$cur")); return; } ;;
    esac
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -F _airlock airlock
